import Crypto
import Foundation
import JOSE
import Primitives

/// Why a Play Integrity token was refused.
public struct PlayIntegrityError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why, as a value: compare with the static values (`reason == .requestHashMismatch`).
    public struct Reason: Sendable, Equatable, CustomStringConvertible {
        enum Kind: Sendable, Equatable {
            case undecryptable
            case signatureInvalid
            case malformed(String)
            case requestHashMismatch
            case packageNotAccepted(String)
            case certificateNotAccepted
            case appNotRecognized(String)
            case deviceIntegrityInsufficient([String])
            case notLicensed(String)
            case stale(ageSeconds: Int)
            case fromTheFuture(aheadSeconds: Int)
        }
        let kind: Kind
        init(_ kind: Kind) { self.kind = kind }
        public var description: String { "\(kind)" }

        /// The token does not decrypt with the configured decryption key (A256KW + A256GCM).
        public static let undecryptable = Self(.undecryptable)
        /// The decrypted JWS does not verify with the configured verification key (ES256).
        public static let signatureInvalid = Self(.signatureInvalid)
        /// The payload is not the JSON Google documents.
        public static func malformed(_ value: String) -> Self { Self(.malformed(value)) }
        /// `requestDetails.requestHash` is not this operation's.
        public static let requestHashMismatch = Self(.requestHashMismatch)
        /// The requesting or recognized package is not the configured one.
        public static func packageNotAccepted(_ value: String) -> Self { Self(.packageNotAccepted(value)) }
        /// No signing-certificate digest of the app is among the configured ones.
        public static let certificateNotAccepted = Self(.certificateNotAccepted)
        /// `appRecognitionVerdict` is not `PLAY_RECOGNIZED` where that is required.
        public static func appNotRecognized(_ value: String) -> Self { Self(.appNotRecognized(value)) }
        /// `deviceRecognitionVerdict` lacks the required level.
        public static func deviceIntegrityInsufficient(_ value: [String]) -> Self { Self(.deviceIntegrityInsufficient(value)) }
        /// `appLicensingVerdict` is not `LICENSED` where that is required.
        public static func notLicensed(_ value: String) -> Self { Self(.notLicensed(value)) }
        /// The token was made longer ago than the freshness window allows.
        public static func stale(ageSeconds: Int) -> Self { Self(.stale(ageSeconds: ageSeconds)) }
        /// The token claims a time ahead of the server's beyond the allowed skew.
        public static func fromTheFuture(aheadSeconds: Int) -> Self { Self(.fromTheFuture(aheadSeconds: aheadSeconds)) }
    }

    public var reason: Reason
    public init(_ reason: Reason) { self.reason = reason }
    public var description: String { "Play Integrity token refused: \(reason)" }
}

/// Google's Play Integrity verdicts verified offline, in Google's "local decryption" mode: the token is a JWE
/// (A256KW + A256GCM) under the app's decryption key, holding a JWS (ES256) under Google's verification key for the
/// app, both from the Play Console. The payload's request, app, device and licence verdicts are checked against
/// ``Requirements``.
public struct PlayIntegrity: Sendable {
    /// What a token must show.
    public struct Requirements: Sendable, Equatable {
        /// The Android package name (`requestDetails.requestPackageName`, `appIntegrity.packageName`).
        public var packageName: String
        /// The app's signing-certificate SHA-256 digests, base64url without padding as Google writes them; one of
        /// the token's must be among them.
        public var certificateSha256Digests: Set<String>
        /// `appRecognitionVerdict` must be `PLAY_RECOGNIZED` (the app Google Play distributes, unmodified).
        public var appRecognized: Bool
        /// The least device integrity (`MEETS_BASIC_INTEGRITY`, `MEETS_DEVICE_INTEGRITY`, `MEETS_STRONG_INTEGRITY`); nil
        /// accepts any device.
        public var deviceIntegrity: String?
        /// `appLicensingVerdict` must be `LICENSED`.
        public var licensed: Bool
        /// How old a token may be.
        public var maximumAge: TimeInterval
        /// How far ahead of the server's clock a token's time may be.
        public var allowedSkew: TimeInterval = 60

        public init(
            packageName: String, certificateSha256Digests: Set<String>, appRecognized: Bool = true,
            deviceIntegrity: String? = "MEETS_DEVICE_INTEGRITY",
            licensed: Bool = false, maximumAge: TimeInterval = 120
        ) {
            self.packageName = packageName
            self.certificateSha256Digests = certificateSha256Digests
            self.appRecognized = appRecognized
            self.deviceIntegrity = deviceIntegrity
            self.licensed = licensed
            self.maximumAge = maximumAge
        }
    }

    /// The verdicts a token carried.
    public struct Verdict: Sendable, Equatable {
        public let packageName: String
        public let appRecognitionVerdict: String
        public let deviceRecognitionVerdict: [String]
        public let appLicensingVerdict: String?
        public let timestamp: Date
    }

    /// The device integrity labels, weakest first: a level is met by itself or a stronger one.
    public static let deviceIntegrityLevels = ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY", "MEETS_STRONG_INTEGRITY"]
    /// Larger than any token Google makes (a few KB).
    public static let maximumTokenBytes = 16 * 1024

    public let decryptionKey: SymmetricKey
    public let verificationKey: P256.Signing.PublicKey
    public let requirements: Requirements

    public init(decryptionKey: SymmetricKey, verificationKey: P256.Signing.PublicKey, requirements: Requirements) {
        self.decryptionKey = decryptionKey
        self.verificationKey = verificationKey
        self.requirements = requirements
    }

    struct Payload: Decodable {
        struct RequestDetails: Decodable {
            var requestPackageName: String
            var timestampMillis: String
            var requestHash: String?
            var nonce: String?
        }
        struct AppIntegrity: Decodable {
            var appRecognitionVerdict: String
            var packageName: String?
            var certificateSha256Digest: [String]?
        }
        struct DeviceIntegrity: Decodable { var deviceRecognitionVerdict: [String]? }
        struct AccountDetails: Decodable { var appLicensingVerdict: String? }
        var requestDetails: RequestDetails
        var appIntegrity: AppIntegrity
        var deviceIntegrity: DeviceIntegrity
        var accountDetails: AccountDetails?
    }

    /// Decrypts and verifies `token`, made for `requestHash` (a standard request's hash, which the app passed to
    /// Google), at `now`.
    public func verify(_ token: String, requestHash: String, at now: Date) throws(PlayIntegrityError) -> Verdict {
        guard token.utf8.count <= Self.maximumTokenBytes else {
            throw PlayIntegrityError(.malformed("the token is larger than \(Self.maximumTokenBytes) bytes"))
        }
        let jws: [UInt8]
        do { jws = try KeyWrappedJWE.decrypt(token, key: decryptionKey) } catch { throw PlayIntegrityError(.undecryptable) }
        let verified: JWS.Verified
        do { verified = try JWS.verify(String(decoding: jws, as: UTF8.self), key: verificationKey) } catch {
            throw PlayIntegrityError(error.reason == .signatureInvalid ? .signatureInvalid : .malformed("the decrypted token is not an ES256 JWS"))
        }
        let payload: Payload
        do { payload = try JSONDecoder().decode(Payload.self, from: Data(verified.payload)) } catch {
            throw PlayIntegrityError(.malformed("the payload lacks requestDetails, appIntegrity or deviceIntegrity"))
        }
        let request = payload.requestDetails
        // The token answers this operation's request, and only it (the hash covers its one-time challenge).
        guard let hash = request.requestHash, ConstantTime.equal(Array(hash.utf8), Array(requestHash.utf8)) else {
            throw PlayIntegrityError(.requestHashMismatch)
        }
        guard let millis = Int64(request.timestampMillis) else { throw PlayIntegrityError(.malformed("timestampMillis is not a number")) }
        let timestamp = Date(timeIntervalSince1970: TimeInterval(millis) / 1000)
        let age = now.timeIntervalSince(timestamp)
        guard age <= requirements.maximumAge else { throw PlayIntegrityError(.stale(ageSeconds: Int(age))) }
        guard -age <= requirements.allowedSkew else { throw PlayIntegrityError(.fromTheFuture(aheadSeconds: Int(-age))) }
        guard request.requestPackageName == requirements.packageName else {
            throw PlayIntegrityError(.packageNotAccepted(String(request.requestPackageName.prefix(64))))
        }
        let app = payload.appIntegrity
        if requirements.appRecognized {
            guard app.appRecognitionVerdict == "PLAY_RECOGNIZED" else {
                throw PlayIntegrityError(.appNotRecognized(String(app.appRecognitionVerdict.prefix(32))))
            }
        }
        // An unevaluated app carries no package or digests: only a policy that does not ask for recognition lets it by.
        if let package = app.packageName, package != requirements.packageName {
            throw PlayIntegrityError(.packageNotAccepted(String(package.prefix(64))))
        }
        if requirements.appRecognized || app.certificateSha256Digest != nil {
            guard let digests = app.certificateSha256Digest, digests.contains(where: requirements.certificateSha256Digests.contains) else {
                throw PlayIntegrityError(.certificateNotAccepted)
            }
        }
        let device = payload.deviceIntegrity.deviceRecognitionVerdict ?? []
        if let level = requirements.deviceIntegrity, let required = Self.deviceIntegrityLevels.firstIndex(of: level) {
            guard Self.deviceIntegrityLevels[required...].contains(where: device.contains) else {
                throw PlayIntegrityError(.deviceIntegrityInsufficient(device.prefix(4).map { String($0.prefix(32)) }))
            }
        }
        let licensing = payload.accountDetails?.appLicensingVerdict
        if requirements.licensed {
            guard licensing == "LICENSED" else { throw PlayIntegrityError(.notLicensed(String((licensing ?? "absent").prefix(32)))) }
        }
        return Verdict(
            packageName: request.requestPackageName, appRecognitionVerdict: app.appRecognitionVerdict, deviceRecognitionVerdict: device,
            appLicensingVerdict: licensing, timestamp: timestamp)
    }
}
