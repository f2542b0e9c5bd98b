import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import UAF

/// In-band authentication and transaction confirmation.
struct AuthenticationFlow {
    let core: ClientCore
    let username: Username?
    let headers: [(String, String)]
    let selector: (any AuthenticatorSelector)?
    let pinVerifier: (any PinUserVerifier)?

    func run() async throws(OperationError) -> (any AuthorizationProvider)? {
        try core.checkIntegrity()
        let server = Server(baseUrl: core.configuration.baseUrl)
        var context: [String: String] = [:]
        if let username { context["username"] = username }
        let contextJSON: String
        do { contextJSON = try UAFMessageCodec.encodeObject(context) } catch { throw .Unknown(cause: error) }
        let message = try await core.fetchUAFRequest(path: core.configuration.authenticationRequestPath, op: .authentication,
                                                     context: contextJSON, headers: headers)
        guard let requests = try? UAFMessageCodec.decode(AuthenticationRequest.self, from: message) else {
            throw .FidoError(errorCode: .protocolError, cause: SDKMessage("the server's AuthenticationRequest cannot be decoded"))
        }
        guard let request = requests.first(where: { $0.header.upv == .uaf11 }) else { throw .FidoError(errorCode: .unsupportedVersion, cause: nil) }
        let appID = try await core.checkAppID(request.header.appID)

        // The transaction this device can show: text/plain (uaf-spec §1.3, one per content type).
        let transaction = request.transaction?.first { $0.contentType == "text/plain" }
        if request.transaction?.isEmpty == false, transaction == nil {
            throw .FidoError(errorCode: .invalidTransactionContent, cause: SDKMessage("no text/plain transaction to show"))
        }
        var transactionText: Data?
        if let transaction {
            guard let content = Base64URL.decode(transaction.content), String(data: content, encoding: .utf8) != nil else {
                throw .FidoError(errorCode: .invalidTransactionContent, cause: nil)
            }
            transactionText = content
        }

        // Candidates: this device's registrations that satisfy the policy.
        let data = core.mirror.snapshot
        let candidates = data.registrations.filter { registration in
            guard registration.server == server, username == nil || registration.username == username,
                  var capabilities = core.descriptor(registration.aaid)?.capabilities else { return false }
            capabilities.keyIDs = [registration.keyID]
            return PolicyMatcher.isSatisfied(request.policy, by: [capabilities])
        }
        let usernames = Set(candidates.map(\.username))
        guard let chosenUser = usernames.first else { throw .FidoError(errorCode: .noSuitableAuthenticator, cause: nil) }
        guard usernames.count == 1 else {
            throw .FidoError(errorCode: .noSuitableAuthenticator, cause: SDKMessage("several accounts match: pass a username"))
        }
        let userCandidates = candidates.filter { $0.username == chosenUser }
        let compliant = Set(userCandidates.map { AAID.normalized($0.aaid) })
        let aaid = try await selectAuthenticator(account: AccountRecord(username: chosenUser, server: server), compliant: compliant,
                                                 data: data, transaction: transactionText)
        guard let registration = userCandidates.first(where: { AAID.normalized($0.aaid) == AAID.normalized(aaid) }),
              let descriptor = core.descriptor(aaid) else {
            throw .FidoError(errorCode: .noSuitableAuthenticator, cause: SDKMessage("\(aaid) is not registered for \(chosenUser)"))
        }
        try await verifyPin(username: chosenUser, data: data, aaid: descriptor.aaid)

        // The counter is advanced durably before anything is signed, so it never repeats.
        let counter = registration.signCounter &+ 1
        let keyID = registration.keyID
        do {
            try await core.updateState { data in
                if let index = data.registrations.firstIndex(where: { $0.keyID == keyID }) { data.registrations[index].signCounter = counter }
            }
        } catch { throw .Unknown(cause: error) }
        let fcParams = try core.finalChallenge(appID: appID, challenge: request.challenge)
        let signed = SignedData(
            aaid: descriptor.aaid, authenticatorVersion: 1, authenticationMode: transaction == nil ? 1 : 2,
            signatureAlgorithm: descriptor.signatureAlgorithm, authenticatorNonce: ClientCore.randomBytes(32),
            finalChallengeHash: FinalChallengeParams.hash(fcParams: fcParams),
            transactionContentHash: transactionText.map { Array(SHA256.hash(data: $0)) } ?? [],
            keyID: Array(Base64URL.decode(registration.keyID) ?? Data()), signCounter: counter)
        let assertion: [UInt8]
        do {
            let signedBytes = try signed.encoded()
            let signature = try await core.keyStore.sign(alias: registration.keyAlias, message: signedBytes)
            assertion = try AuthenticationAssertion.encode(signedData: signedBytes, signature: SignatureSuite.encode(signature, as: descriptor.signatureAlgorithm))
        } catch KeyStoreError.keyNotFound {
            throw .FidoError(errorCode: .keyDisappearedPermanently, cause: nil)
        } catch {
            throw .Unknown(cause: error)
        }
        var header = request.header
        header.appID = appID
        let response = AuthenticationResponse(header: header, fcParams: fcParams, assertions: [AuthenticatorSignAssertion(assertion: Base64URL.encode(assertion))])
        let answer = try await core.sendUAFResponse(path: core.configuration.authenticationResponsePath, response: response, headers: headers)
        return Self.authorizationProvider(from: answer.additionalTokens ?? [], server: core.configuration.baseUrl)
    }

    private func selectAuthenticator(account: AccountRecord, compliant: Set<String>, data: LocalStateData, transaction: Data?) async throws(OperationError) -> String {
        guard let selector else {
            guard compliant.count == 1, let only = compliant.first else {
                throw .Unknown(cause: SDKMessage("several authenticators are possible: set an authenticatorSelector"))
            }
            return only
        }
        let context = SelectionContextValue(account: account, authenticators: core.authenticators(in: data),
                                            transactionConfirmationData: transaction, compliant: compliant)
        return try await core.interact { (gate: InteractionGate<String>) in
            selector.selectAuthenticator(context: context, handler: SelectionHandlerValue(gate: gate))
        }
    }

    /// Asks for the PIN until it is right, the user cancels, or the authenticator locks (cool-down per
    /// ``CoolDownPolicy``; the verifier is called again with the new protection status after each failure).
    private func verifyPin(username: Username, data: LocalStateData, aaid: String) async throws(OperationError) {
        guard let pinVerifier else { throw .Unknown(cause: SDKMessage("the PIN authenticator needs a pinUserVerifier")) }
        guard let authenticator = core.authenticators(in: data).first(where: { $0.aaid == aaid }) else {
            throw .FidoError(errorCode: .noSuitableAuthenticator, cause: nil)
        }
        var status: PinAuthenticatorProtectionStatus
        do { status = try await core.pins.status(username: username, now: core.platform.now()) } catch { throw .Unknown(cause: error) }
        if status == .LockedOut { throw .FidoError(errorCode: .userLockout, cause: nil) }
        while true {
            let context = PinVerificationContextValue(authenticator: authenticator, authenticatorProtectionStatus: status)
            let pin = try await core.interact { (gate: InteractionGate<String>) in
                pinVerifier.verifyPin(context: context, handler: PinVerificationHandlerValue(gate: gate))
            }
            let outcome: PinVerifierStore.Outcome
            do { outcome = try await core.pins.verify(username: username, pin: pin, now: core.platform.now()) } catch { throw .Unknown(cause: error) }
            switch outcome {
            case .verified: return
            case .rejected(let newStatus): status = newStatus
            case .lockedOut: throw .FidoError(errorCode: .userLockout, cause: nil)
            case .notEnrolled: throw .FidoError(errorCode: .userNotEnrolled, cause: nil)
            }
        }
    }

    /// The authorization a successful authentication hands the app, as the Nevis SDK does: the server's JWT
    /// when it sent one (usable as a bearer token against any instance), else its session cookie.
    static func authorizationProvider(from tokens: [Token], server: URL) -> (any AuthorizationProvider)? {
        if let jwt = tokens.first(where: { $0.type == .jwt }), !jwt.value.isEmpty { return JwtAuthorizationProvider(jwt: jwt.value) }
        if let cookie = tokens.first(where: { $0.type == .httpCookie }) {
            let cookies = HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": cookie.value], for: server)
            if !cookies.isEmpty { return CookieAuthorizationProvider(cookies) }
        }
        return nil
    }
}
