import Primitives
import Crypto
import Foundation
import NevisProtocol
import UAF
import UAFSimulation

/// Issue 3's benchmark: UAF authentication-response verification per second on one core, next to raw P-256
/// ECDSA verification per second measured in the same run.
enum VerificationBench {
    static func run() async throws {
        var authenticator = SoftwareAuthenticator()
        let appID = "https://127.0.0.1:8443/nevisfido/uaf/1.1/facets"
        let challenge = Base64URL.encode((0..<32).map { UInt8($0) })
        let policy = Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1001"])]])
        let request = AuthenticationRequest(header: OperationHeader(op: .authentication, appID: appID, serverData: "bench"), challenge: challenge, policy: policy)
        let response = try authenticator.authenticate(request, serverAppID: appID)
        guard let assertion = response.assertions.first.flatMap({ Base64URL.decode($0.assertion) }).map(Array.init) else { fatalError("bench setup: no assertion") }
        let metadata = try MetadataStore(NevisAuthenticatorMetadata.statements)
        let verifier = AuthenticationVerifier(configuration: RelyingPartyConfiguration(appID: appID, trustedFacetIDs: [authenticator.facetID]), metadata: metadata)
        let issued = IssuedAuthentication(challenge: challenge, policy: policy)
        let registered = authenticator.registeredKey(username: "bench")
        @Sendable func lookup(_ aaid: String, _ keyID: String) async throws -> RegisteredKey? { registered }

        // Raw P-256: the same DER signature over the same SIGNED_DATA bytes, parsed and verified (what any
        // verifier of an ALG_SIGN 0x0002 signature must do), with the key already decoded.
        let parsed = try AuthenticationAssertion(bytes: assertion)
        let signatureBytes = parsed.signature
        let publicKey = authenticator.key.publicKey
        let message = parsed.signedBytes
        @inline(__always) func rawVerify() -> Bool {
            guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes) else { return false }
            return publicKey.isValidSignature(signature, for: message)
        }
        guard rawVerify() else { fatalError("bench setup: raw signature invalid") }
        _ = try await verifier.verify(response, issued: issued, lookup: lookup)

        print("UAF authentication verification vs raw P-256 ECDSA verification (one core, same run)")
        var rawRates: [Double] = []
        var uafRates: [Double] = []
        let iterations = 4000
        for _ in 0..<5 {
            let raw = await Measure.nanoseconds {
                for _ in 0..<iterations { precondition(rawVerify()) }
            }
            rawRates.append(Double(iterations) / (raw / 1e9))
            let uaf = try await Measure.nanoseconds {
                for _ in 0..<iterations { _ = try await verifier.verify(response, issued: issued, lookup: lookup) }
            }
            uafRates.append(Double(iterations) / (uaf / 1e9))
        }
        let rawMedian = Measure.median(rawRates), uafMedian = Measure.median(uafRates)
        print(String(format: "  raw P-256 ECDSA verify                         %8.0f /s", rawMedian))
        print(String(format: "  UAF AuthenticationResponse verify              %8.0f /s", uafMedian))
        let ratio = uafMedian / rawMedian
        print(String(format: "  ratio UAF / raw                                %8.3f  (target ≥ 0.75: %@)", ratio, ratio >= 0.75 ? "met" : "MISSED"))
    }
}
