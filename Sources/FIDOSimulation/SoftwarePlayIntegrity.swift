import Crypto
import Foundation
import JOSE
import Primitives

/// Google's Play Integrity in software, for tests and the simulated Android device: it makes verdict tokens as Google
/// does for "local decryption" (a JWS, ES256, under its verification key, inside a JWE, A256KW + A256GCM, under the
/// app's decryption key). A server trusts them only when configured with these keys, which a production server never
/// is: they live in this process.
public struct SoftwarePlayIntegrity: Sendable {
    public let decryptionKey: SymmetricKey
    public let signingKey: P256.Signing.PrivateKey

    public init(decryptionKey: SymmetricKey = SymmetricKey(size: .bits256), signingKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) {
        self.decryptionKey = decryptionKey
        self.signingKey = signingKey
    }

    /// The virtual device's Android app as Play Integrity names it: its package, and the SHA-256 digest (base64url) of
    /// the certificate it is signed with. What `mauth device` reports.
    public static let virtualDevicePackageName = "ch.nevis.mauth.virtualdevice"
    public static var virtualDeviceCertificateDigest: String {
        Base64URL.encode(Array(SHA256.hash(data: Array("mauth virtual device signing certificate".utf8))))
    }

    /// The decryption key as the Play Console shows it (base64 of 32 bytes).
    public var decryptionKeyBase64: String { decryptionKey.withUnsafeBytes { Data($0).base64EncodedString() } }
    /// The verification key as the Play Console shows it (base64 of the DER SubjectPublicKeyInfo).
    public var verificationKeyBase64: String { signingKey.publicKey.derRepresentation.base64EncodedString() }

    /// What a token says; every field as Google's payload names it.
    public struct Verdicts: Sendable {
        public var packageName: String
        public var certificateSha256Digests: [String]
        public var appRecognitionVerdict = "PLAY_RECOGNIZED"
        public var deviceRecognitionVerdict = ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY"]
        public var appLicensingVerdict = "LICENSED"
        public var versionCode = "42"

        public init(packageName: String, certificateSha256Digests: [String]) {
            self.packageName = packageName
            self.certificateSha256Digests = certificateSha256Digests
        }
    }

    /// The payload JSON of a standard request's verdict for `requestHash` made at `timestamp`.
    public static func payload(_ verdicts: Verdicts, requestHash: String, timestamp: Date) throws -> [UInt8] {
        let object: [String: Any] = [
            "requestDetails": [
                "requestPackageName": verdicts.packageName, "timestampMillis": String(Int64(timestamp.timeIntervalSince1970 * 1000)),
                "requestHash": requestHash,
            ],
            "appIntegrity": [
                "appRecognitionVerdict": verdicts.appRecognitionVerdict, "packageName": verdicts.packageName,
                "certificateSha256Digest": verdicts.certificateSha256Digests, "versionCode": verdicts.versionCode,
            ],
            "deviceIntegrity": ["deviceRecognitionVerdict": verdicts.deviceRecognitionVerdict],
            "accountDetails": ["appLicensingVerdict": verdicts.appLicensingVerdict],
        ]
        return Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    /// A token for `requestHash`, made at `timestamp`.
    public func token(_ verdicts: Verdicts, requestHash: String, timestamp: Date = Date()) throws -> String {
        let jws = try JWS.sign(try Self.payload(verdicts, requestHash: requestHash, timestamp: timestamp), key: signingKey)
        return try KeyWrappedJWE.encrypt(Array(jws.utf8), key: decryptionKey)
    }
}
