import Foundation

/// What the app sees when it must choose an authenticator.
public protocol AuthenticatorSelectionContext: Sendable {
    var account: any Account { get }
    /// All authenticators of the SDK (filter with ``isPolicyCompliant(authenticatorAaid:)``).
    var authenticators: [any Authenticator] { get }
    /// The transaction to confirm (UTF-8 text), if any.
    var transactionConfirmationData: Data? { get }
    /// Whether choosing this authenticator satisfies the server's policy.
    func isPolicyCompliant(authenticatorAaid: String) -> Bool
}

/// The app's answer to an authenticator selection.
public protocol AuthenticatorSelectionHandler: Sendable {
    func aaid(_ aaid: String)
    func cancel()
}

/// Implemented by the app: shows the authenticators and reports the user's choice.
public protocol AuthenticatorSelector: Sendable {
    func selectAuthenticator(context: any AuthenticatorSelectionContext, handler: any AuthenticatorSelectionHandler)
}

struct SelectionContextValue: AuthenticatorSelectionContext {
    let account: any Account
    let authenticators: [any Authenticator]
    let transactionConfirmationData: Data?
    let compliant: Set<String>
    func isPolicyCompliant(authenticatorAaid: String) -> Bool { compliant.contains(authenticatorAaid.uppercased()) }
}

/// What the app sees when it must choose an account (authentication without a username, several accounts).
public protocol AccountSelectionContext: Sendable {
    var accounts: [any Account] { get }
    var authenticators: [any Authenticator] { get }
    /// The transaction to confirm (UTF-8 text), if any.
    var transactionConfirmationData: Data? { get }
    /// Whether authenticating `username` with `aaid` satisfies the server's policy.
    func isPolicyCompliant(username: Username, aaid: String) -> Bool
}

public protocol AccountSelectionHandler: Sendable {
    func username(_ username: Username)
    func cancel()
}

/// Implemented by the app: shows the accounts and reports the user's choice.
public protocol AccountSelector: Sendable {
    func selectAccount(context: any AccountSelectionContext, handler: any AccountSelectionHandler)
}

struct AccountSelectionContextValue: AccountSelectionContext {
    let accounts: [any Account]
    let authenticators: [any Authenticator]
    let transactionConfirmationData: Data?
    /// username → compliant normalized AAIDs.
    let compliant: [Username: Set<String>]
    func isPolicyCompliant(username: Username, aaid: String) -> Bool { compliant[username]?.contains(aaid.uppercased()) ?? false }
}
