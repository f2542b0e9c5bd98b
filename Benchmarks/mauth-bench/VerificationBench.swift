import Crypto
import Foundation
import UAF

/// Issue 3's benchmark: UAF authentication-response verification per second on one core, next to raw P-256
/// ECDSA verification per second measured in the same run.
enum VerificationBench {
    static func run() async throws {
        let key = P256.Signing.PrivateKey()
        let appID = "https://127.0.0.1:8443/nevisfido/uaf/1.1/facets"
        let facet = "ios:bundle-id:ch.nevis.mauth.virtualdevice"
        let challenge = Base64URL.encode((0..<32).map { UInt8($0) })
        let fcParams = try FinalChallengeParams(appID: appID, challenge: challenge, facetID: facet).encodedFCParams()
        let keyID = (0..<32).map { UInt8($0 &* 3) }
        let signed = SignedData(aaid: "F1D0#1001", authenticatorVersion: 1, authenticationMode: 1, signatureAlgorithm: .secp256r1ECDSASHA256DER,
                                authenticatorNonce: (0..<32).map { UInt8($0) }, finalChallengeHash: FinalChallengeParams.hash(fcParams: fcParams),
                                transactionContentHash: [], keyID: keyID, signCounter: 1)
        let assertion = try AssertionBuilder.authentication(signed, sign: AssertionBuilder.p256Signer(key, algorithm: .secp256r1ECDSASHA256DER))
        let response = AuthenticationResponse(header: OperationHeader(op: .authentication, appID: appID, serverData: "bench"),
                                              fcParams: fcParams, assertions: [AuthenticatorSignAssertion(assertion: Base64URL.encode(assertion))])
        let metadata = try MetadataStore([MetadataStatement(
            aaid: "F1D0#1001", description: "iOS PIN", attestationTypes: [15880], userVerificationDetails: [[.init(userVerification: 4)]],
            authenticationAlgorithm: 2, keyProtection: 1, matcherProtection: 1, publicKeyAlgAndEncoding: 257)])
        let verifier = AuthenticationVerifier(configuration: RelyingPartyConfiguration(appID: appID, trustedFacetIDs: [facet]), metadata: metadata)
        let issued = IssuedAuthentication(challenge: challenge, policy: Policy(accepted: [[MatchCriteria(aaid: ["F1D0#1001"])]]))
        let registered = RegisteredKey(aaid: "F1D0#1001", keyID: Base64URL.encode(keyID), username: "bench",
                                       publicKey: Array(key.publicKey.derRepresentation), publicKeyEncoding: .eccX962DER, signCounter: 0)
        @Sendable func lookup(_ aaid: String, _ keyID: String) async throws -> RegisteredKey? { registered }

        // Raw P-256: the same DER signature over the same SIGNED_DATA bytes, parsed and verified (what any
        // verifier of an ALG_SIGN 0x0002 signature must do), with the key already decoded.
        let parsed = try AuthenticationAssertion(bytes: assertion)
        let signatureBytes = parsed.signature
        let publicKey = key.publicKey
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
