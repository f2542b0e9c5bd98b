import FIDOSimulation
import Foundation
import NIOCore
import NevisProtocol
import UAF

/// A virtual device's account: its username and its software authenticator (key, key id, counter). No storage,
/// no key derivation: the load tool measures the server, not the phone.
struct VirtualUser: Sendable {
    var username: String
    var authenticator: SoftwareAuthenticator
    /// The user's passkeys (a passkey run).
    var passkeys: SoftwarePasskeyAuthenticator
    /// The body of this user's passkey sign-in options request, built once as ``authenticationRequestBody`` is.
    var passkeyOptionsBody: ByteBuffer?
    /// The body of this user's authentication requests: the same for every login of a run (username and the plan's
    /// transaction), so it is built once. That JSON is the generator's own work, which would otherwise take CPU from
    /// the server it measures on the same cores.
    var authenticationRequestBody: ByteBuffer?
    /// The device's App Attest key, when the plan attests (``LoadPlan/appAttest``).
    var appAttest: SoftwareAppAttestation?

    init(username: String, facetID: String, passkeyOrigin: String = "https://localhost") {
        self.username = username
        authenticator = SoftwareAuthenticator()
        authenticator.facetID = facetID
        // A hardware key's behaviour: it counts, so the server's compare-and-set on the counter is measured too.
        passkeys = SoftwarePasskeyAuthenticator(origin: passkeyOrigin, backupEligible: false, counts: true)
    }

    /// The response's header with the device's App Attest answer added when the request asks for one and the plan
    /// attests: the attestation on the key's first use, an assertion afterwards (the device's own work, before the
    /// response is sent).
    mutating func attest(_ header: inout OperationHeader, fcParams: String, asked request: OperationHeader) throws {
        guard var app = appAttest, AppAttestationWire.asked(in: request) != nil else { return }
        let answer = try app.answer(fcParams: fcParams)
        appAttest = app
        header.exts = (header.exts ?? []) + [answer]
    }

    /// User `index` of the plan's population (registered over HTTP or written to the database: the same name).
    init(member index: Int, of plan: LoadPlan) { self.init(username: Self.username(member: index, of: plan), of: plan) }

    static func username(member index: Int, of plan: LoadPlan) -> String { "\(plan.usernamePrefix)-\(index)" }

    /// A device of the plan's (its facet, passkey origin and, when the plan attests, an App Attest key of its own).
    init(username: String, of plan: LoadPlan) {
        self.init(username: username, facetID: plan.facetID, passkeyOrigin: plan.passkeyOrigin)
        appAttest = plan.appAttest.map { SoftwareAppAttestation(authority: $0.authority, appID: $0.appID) }
    }
}
