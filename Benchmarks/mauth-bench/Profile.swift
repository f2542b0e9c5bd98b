import Primitives
import Crypto
import Foundation
import UAF
import UAFSimulation

/// Per-step costs of verification, to see where the time goes (`mauth-bench profile`).
enum VerificationProfile {
    static func run() async throws {
        let key = P256.Signing.PrivateKey()
        let fc = try FinalChallengeParams(appID: "https://127.0.0.1:8443/nevisfido/uaf/1.1/facets", challenge: Base64URL.encode((0..<32).map { UInt8($0) }),
                                          facetID: SoftwareAuthenticator.virtualDeviceFacetID).encodedFCParams()
        let signed = SignedData(aaid: "F1D0#1001", authenticatorVersion: 1, authenticationMode: 1, signatureAlgorithm: .secp256r1ECDSASHA256DER,
                                authenticatorNonce: (0..<32).map { UInt8($0) }, finalChallengeHash: FinalChallengeParams.hash(fcParams: fc),
                                transactionContentHash: [], keyID: Array(repeating: 1, count: 32), signCounter: 1)
        let assertion = try AssertionBuilder.authentication(signed, sign: AssertionBuilder.p256Signer(key, algorithm: .secp256r1ECDSASHA256DER))
        let encoded = Base64URL.encode(assertion)
        let der = Array(key.publicKey.derRepresentation)
        let n = 20_000
        func each(_ name: String, _ body: () throws -> Void) rethrows {
            let clock = ContinuousClock(); let start = clock.now
            for _ in 0..<n { try body() }
            let d = clock.now - start
            print("  \(name.padding(toLength: 30, withPad: " ", startingAt: 0)) \(String(format: "%.2f µs", (Double(d.components.attoseconds) / 1e12 + Double(d.components.seconds) * 1e6) / Double(n)))")
        }
        each("base64url decode assertion") { _ = Base64URL.decode(encoded) }
        each("fcParams decode (JSON)") { _ = FinalChallengeParams.decode(fcParams: fc) }
        each("fcParams hash") { _ = FinalChallengeParams.hash(fcParams: fc) }
        try each("TLV parse") { _ = try AuthenticationAssertion(bytes: assertion) }
        each("key parse (DER SPKI)") { _ = UAFPublicKey(bytes: der, encoding: .eccX962DER) }
        let parsed = try AuthenticationAssertion(bytes: assertion)
        try each("signature DER parse") { _ = try P256.Signing.ECDSASignature(derRepresentation: parsed.signature) }
        each("base64url encode keyID") { _ = Base64URL.encode(parsed.signedData.keyID) }
    }
}
