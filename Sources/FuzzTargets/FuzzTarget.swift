import CBOR
import Crypto
import Foundation

/// The parsers that take bytes from outside, each as one fuzz target: the libFuzzer harness (`mauth-fuzz`, built
/// with `-sanitize=fuzzer,address` by `Fuzz/run`) and the regression tests feed them the same way.
///
/// A target must never trap on any input, and checks the invariants a crash-only fuzzer would miss: what parses,
/// re-encodes to something that parses to the same value; fcParams, read by the wire's JSON reader, agree with Foundation's
/// JSON parser; nothing verifies or decrypts under a key it was not made for. A broken invariant is a
/// ``FuzzFinding``, which the harness turns into a crash so that libFuzzer saves the input.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// UAFV1TLV: the raw decoder and the registration and authentication assertion parsers.
    case tlv
    /// The UAF protocol messages (stringified JSON arrays), down to the assertions and fcParams they carry.
    case uafMessage = "uaf-message"
    /// fcParams as the verifier reads them (WireJSONDecoder), checked against Foundation's reading.
    case fcParams = "fcparams"
    /// Compact JWS (ES256) verification and compact JWE (ECDH-ES, A256GCM) decryption.
    case jose
    /// The out-of-band dispatch payload: JSON, base64url or link, plain or encrypted.
    case oobPayload = "oob-payload"
    /// The SecureStorage file: its parser and the whole load path with a fixed key.
    case secureStorageFile = "secure-storage-file"
    /// The wire JSON codec (every UAF message and body goes through it), checked against Foundation's coders.
    case wireJSON = "wire-json"
    /// The CBOR decoder under both rule sets, and the canonical encoder.
    case cbor
    /// WebAuthn's authenticator data, with the COSE credential key inside it.
    case webAuthn = "webauthn"
    /// WebAuthn attestation objects through every statement format's procedure (TPM structures, certificates, JWS).
    case attestation
    /// Certificate revocation lists (DER) for attestation chains.
    case crl
    /// Apple App Attest attestation objects (every step but the chain) and assertions.
    case appAttest = "app-attest"

    /// Runs one input. Returns whether the target's parser accepted it (what a seed must be, so that mutations start
    /// deep), for every input the code handles as it must; throws a ``FuzzFinding`` when an invariant breaks.
    @discardableResult
    public func run(_ input: [UInt8]) throws(FuzzFinding) -> Bool {
        switch self {
        case .tlv: try TLVTarget.run(input)
        case .uafMessage: try UAFMessageTarget.run(input)
        case .fcParams: try FCParamsTarget.run(input)
        case .jose: try JOSETarget.run(input)
        case .oobPayload: try OOBPayloadTarget.run(input)
        case .secureStorageFile: try SecureStorageFileTarget.run(input)
        case .wireJSON: try WireJSONTarget.run(input)
        case .cbor: try CBORTarget.run(input)
        case .webAuthn: try WebAuthnTarget.run(input)
        case .attestation: try AttestationTarget.run(input)
        case .crl: try RevocationListTarget.run(input)
        case .appAttest: try AppAttestTarget.run(input)
        }
    }
}

/// An invariant a fuzz target found broken: a bug, with what was expected.
public struct FuzzFinding: Error, CustomStringConvertible, Sendable {
    public let target: String
    public let message: String
    public var description: String { "\(target): \(message)" }
}

func require(_ condition: Bool, _ target: FuzzTarget, _ message: @autoclosure () -> String) throws(FuzzFinding) {
    guard condition else { throw FuzzFinding(target: target.rawValue, message: message()) }
}

/// The first 64 bytes of a binary input in hex: how a finding's message shows it.
func hexPrefix(_ input: [UInt8]) -> String { input.prefix(64).map { String($0, radix: 16) }.joined(separator: " ") }

/// Fixed keys, so that seeds made with them reach past signature and decryption checks and a run is repeatable.
/// They protect nothing: they exist only here.
enum FuzzKeys {
    private static func scalar(_ label: String) -> Data { Data(SHA256.hash(data: Data(label.utf8))) }
    // SHA-256 of a fixed label is a valid P-256 scalar (below the group order) with overwhelming probability, and
    // these two are: the seeds are made with them.
    static let signing = try! P256.Signing.PrivateKey(rawRepresentation: scalar("mauth-fuzz/jws"))
    static let otherSigning = try! P256.Signing.PrivateKey(rawRepresentation: scalar("mauth-fuzz/jws-other"))
    static let agreement = try! P256.KeyAgreement.PrivateKey(rawRepresentation: scalar("mauth-fuzz/jwe"))
    static let otherAgreement = try! P256.KeyAgreement.PrivateKey(rawRepresentation: scalar("mauth-fuzz/jwe-other"))
    static let storeKEK = SymmetricKey(data: scalar("mauth-fuzz/store-kek"))
    static let storeDataKey = SymmetricKey(data: scalar("mauth-fuzz/store-data-key"))
}
