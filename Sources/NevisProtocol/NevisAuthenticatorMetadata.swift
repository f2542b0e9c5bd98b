import Foundation
import UAF

/// The metadata of the Nevis authenticators: the statements nevisFIDO ships (seed `001_73adbe519082f24f.txt`,
/// "Default Nevis Authenticator Metadata", copied verbatim) in `NevisAuthenticatorMetadata.json` beside this file,
/// compiled into the binary, with three documented additions:
/// - the Android statements (`F1D0#000x`) also list `authenticationAlgorithms: [2, 9]` and
///   `publicKeyAlgAndEncodings: [257, 259]`, because the seed's algorithm table (000, §4.3.2) says those
///   authenticators sign with ECDSA P-256 DER or RSA PKCS#1 DER, while the single numbers of the statements
///   name only the legacy RSA algorithm;
/// - statements for the password authenticators `F1D0#0005` (Android) and `F1D0#1005` (iOS), shaped like the
///   PIN statements of their platform, as the seed's table lists them with the same algorithms;
/// - the Android statements accept full basic attestation (15879) besides surrogate, through Android key
///   attestation to Google's hardware attestation roots, whose public keys they list in the Nevis extension
///   `nevis.auth.fido.uaf.google-attestation-root-keys` (server-api E.1): the RSA-4096 key of the roots in use since
///   2016 and the ECDSA P-384 key of "Key Attestation CA1", which signs from February 2026 (both from
///   developer.android.com's key attestation page; each root certificate's self-signature checked with OpenSSL).
///
/// The server trusts these statements when its configuration names no metadata; the SDK reads its authenticators'
/// capabilities from them, so client and server describe each AAID in one place.
public enum NevisAuthenticatorMetadata {
    /// The JSON document: an array of metadata statements.
    public static var json: Data { Data(PackageResources.NevisAuthenticatorMetadata_json) }

    /// The statements parsed. The JSON is compiled in and a unit test parses it, so a failure here is a build defect,
    /// not an input error.
    public static let statements: [MetadataStatement] = {
        do { return try UAFMetadata.statements(fromJSON: json) } catch {
            preconditionFailure("NevisAuthenticatorMetadata.json: \(error)")
        }
    }()
}
