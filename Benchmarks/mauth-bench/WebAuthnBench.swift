import CBOR
import Crypto
import Foundation
import Primitives
import WebAuthn

/// Issue 54's benchmark: WebAuthn registration (packed self attestation, one P-256 signature) and authentication
/// verification per second on one core, next to raw P-256 ECDSA verification of the same signature in the same run
/// (for a registration, with the new key's import, which every verifier of a new key does).
enum WebAuthnBench {
    static func run() async throws {
        let key = P256.Signing.PrivateKey()
        let point = Array(key.publicKey.x963Representation)
        let cose = COSEKey(key.publicKey).encoded
        let relyingParty = RelyingParty(id: "example.org", origins: ["https://example.org"])
        let challenge = [UInt8](repeating: 0x42, count: 32)
        let credentialID = [UInt8](repeating: 0xC1, count: 16)
        func clientData(_ type: String) -> [UInt8] {
            Array(#"{"type":"\#(type)","challenge":"\#(Base64URL.encode(challenge))","origin":"https://example.org","crossOrigin":false}"#.utf8)
        }
        let prefix = Array(SHA256.hash(data: Array("example.org".utf8)))
        // Registration: UP, UV, AT; a packed self statement.
        let registrationData = prefix + [0x45, 0, 0, 0, 0] + [UInt8](repeating: 0xAA, count: 16) + [0, 16] + credentialID + cose
        let registrationClient = clientData("webauthn.create")
        let selfSignature = Array(try key.signature(for: registrationData + SHA256.hash(data: registrationClient)).derRepresentation)
        let object = CBOREncoder.encode(.map(CBORMap([
            .init(.text("fmt"), .text("packed")),
            .init(.text("attStmt"), .map(CBORMap([.init(.text("alg"), .int(-7)), .init(.text("sig"), .bytes(selfSignature))]))),
            .init(.text("authData"), .bytes(registrationData)),
        ])))
        let registration = RegistrationResponse(credentialID: credentialID, clientDataJSON: registrationClient, attestationObject: object)
        let ceremony = RegistrationCeremony(relyingParty: relyingParty)
        let expectation = RegistrationExpectation(challenge: challenge)
        let registered = try await ceremony.verify(registration, expected: expectation)

        // Authentication: UP, UV, counter 1.
        let assertionData = prefix + [0x05, 0, 0, 0, 1]
        let assertionClient = clientData("webauthn.get")
        let assertionSignature = Array(try key.signature(for: assertionData + SHA256.hash(data: assertionClient)).derRepresentation)
        let assertion = AssertionResponse(credentialID: credentialID, clientDataJSON: assertionClient, authenticatorData: assertionData,
                                          signature: assertionSignature, userHandle: [1])
        let stored = StoredCredential(id: credentialID, publicKey: registered.publicKey, userHandle: [1], signCount: 0, backupEligible: false)
        let authentication = AuthenticationCeremony(relyingParty: relyingParty)
        let request = AssertionExpectation(challenge: challenge, allowCredentials: [credentialID])
        _ = try authentication.verify(assertion, expected: request, credential: stored)

        // Raw P-256: the assertion's DER signature parsed and verified over the same bytes, the key already decoded.
        let message = assertionData + SHA256.hash(data: assertionClient)
        let publicKey = key.publicKey
        @inline(__always) func rawVerify() -> Bool {
            guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: assertionSignature) else { return false }
            return publicKey.isValidSignature(signature, for: message)
        }
        guard rawVerify() else { fatalError("bench setup: raw signature invalid") }
        // Raw P-256 for a new key: the point imported (and checked on the curve) first, as any verifier of a
        // registration must, then the same verification.
        let selfMessage = registrationData + SHA256.hash(data: registrationClient)
        @inline(__always) func rawImportAndVerify() -> Bool {
            guard let imported = try? P256.Signing.PublicKey(x963Representation: point),
                  let signature = try? P256.Signing.ECDSASignature(derRepresentation: selfSignature) else { return false }
            return imported.isValidSignature(signature, for: selfMessage)
        }
        guard rawImportAndVerify() else { fatalError("bench setup: raw self signature invalid") }

        print("WebAuthn verification vs raw P-256 ECDSA verification (one core, same run)")
        var raw: [Double] = [], rawImport: [Double] = [], registrations: [Double] = [], authentications: [Double] = []
        let iterations = 4000
        for _ in 0..<5 {
            raw.append(Double(iterations) / (await Measure.nanoseconds { for _ in 0..<iterations { precondition(rawVerify()) } } / 1e9))
            rawImport.append(Double(iterations) / (await Measure.nanoseconds { for _ in 0..<iterations { precondition(rawImportAndVerify()) } } / 1e9))
            registrations.append(Double(iterations) / (try await Measure.nanoseconds {
                for _ in 0..<iterations { _ = try await ceremony.verify(registration, expected: expectation) }
            } / 1e9))
            authentications.append(Double(iterations) / (try await Measure.nanoseconds {
                for _ in 0..<iterations { _ = try authentication.verify(assertion, expected: request, credential: stored) }
            } / 1e9))
        }
        let rawMedian = Measure.median(raw), rawImportMedian = Measure.median(rawImport)
        print(String(format: "  raw P-256 ECDSA verify                   %8.0f /s", rawMedian))
        print(String(format: "  raw P-256 key import and verify          %8.0f /s", rawImportMedian))
        for (name, rates, baseline) in [("registration (packed self)", registrations, rawImportMedian), ("authentication", authentications, rawMedian)] {
            let median = Measure.median(rates)
            let ratio = median / baseline
            print(String(format: "  %@ %8.0f /s, ratio to raw %5.3f (target ≥ 0.83: %@)", name.padding(toLength: 40, withPad: " ", startingAt: 0),
                         median, ratio, ratio >= 0.83 ? "met" : "MISSED"))
        }
    }
}
