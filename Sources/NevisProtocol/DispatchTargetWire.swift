import Crypto
import Foundation
import JOSE
import Primitives

/// The bodies of the Dispatch Target Service (server-api.md §B.8), shared by the server and the SDK.
public enum DispatchTargetWire {
    /// The dispatchers the server knows (§B.6).
    public enum Dispatcher: String, Codable, Sendable, CaseIterable {
        case firebaseCloudMessaging = "firebase-cloud-messaging"
        case pngQRCode = "png-qr-code"
        case link = "link"
        case linkPNGQRCode = "link-png-qr-code"
    }

    /// A device name: 1…256 UTF-8 bytes without control characters (it is shown to people and logged).
    public static let maximumNameBytes = 256
    public static func isValid(name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maximumNameBytes && !Text.hasControlCharacters(name)
    }

    /// A push address (FCM registration token): 1…4096 bytes.
    public static let maximumPushTokenBytes = 4096
    public static func isValid(pushToken: String) -> Bool { !pushToken.isEmpty && pushToken.utf8.count <= maximumPushTokenBytes }

    /// POST `/nevisfido/token/dispatch/targets`: the device's name, its push address and its two public keys.
    public struct Creation: Codable, Hashable, Sendable {
        public var username: String?
        public var name: String
        public var deviceId: String?
        public var dispatcher: String?
        /// The dispatcher address: the FCM registration token.
        public var target: String?
        /// The P-256 public key, as JWK JSON text, that verifies the device's JWS requests.
        public var signatureKey: String
        /// The P-256 public key, as JWK JSON text, that out-of-band payloads are encrypted to.
        public var encryptionKey: String?

        public init(
            username: String?, name: String, deviceId: String?, dispatcher: String?, target: String?, signatureKey: String, encryptionKey: String?
        ) {
            self.username = username
            self.name = name
            self.deviceId = deviceId
            self.dispatcher = dispatcher
            self.target = target
            self.signatureKey = signatureKey
            self.encryptionKey = encryptionKey
        }
    }

    /// 201 answer of a creation.
    public struct Created: Codable, Hashable, Sendable {
        public var id: String
        public var extId: String
        public init(id: String, extId: String) {
            self.id = id
            self.extId = extId
        }
    }

    /// PATCH `/nevisfido/token/dispatch/targets/{id}`: the payload of the compact JWS body, signed with the target's
    /// `signatureKey`. Our contract: the replay-protection members of every device-signed request plus the members
    /// to change; an absent member is left as it is, and `disablePushNotifications` removes the push address.
    public struct Modification: Codable, Hashable, Sendable {
        public var dispatchTargetId: String
        public var requestId: String
        public var creationTimeInEpochMillis: Int64
        public var name: String?
        public var target: String?
        public var disablePushNotifications: Bool?
        public var htm: String?
        public var htu: String?

        public init(claims: DeviceSignature.Claims, name: String? = nil, target: String? = nil, disablePushNotifications: Bool? = nil) {
            dispatchTargetId = claims.dispatchTargetId
            requestId = claims.requestId
            creationTimeInEpochMillis = claims.creationTimeInEpochMillis
            htm = claims.htm
            htu = claims.htu
            self.name = name
            self.target = target
            self.disablePushNotifications = disablePushNotifications
        }

        public var claims: DeviceSignature.Claims {
            DeviceSignature.Claims(
                dispatchTargetId: dispatchTargetId, requestId: requestId, creationTimeInEpochMillis: creationTimeInEpochMillis,
                htm: htm, htu: htu)
        }
    }
}

/// Device-signed requests (server-api.md §C.3). Our contract: a compact JWS, `alg` ES256, `kid` the dispatch target
/// id, signed with the target's signature key; its payload carries at least ``Claims``. The server accepts a
/// request once (the request id is remembered) and only within a clock skew of its creation time.
///
/// A signature also names the request it authorizes, as DPoP does (RFC 9449): the method (`htm`), the path
/// (`htu`; a path, not a URL, since a proxy in front may change the scheme and host) and, when it travels in the
/// `Device-Signature` header, the SHA-256 of the body (`bodyHash`, base64url). So a captured header is good for that
/// one request only, never for another endpoint, resource or body.
public enum DeviceSignature {
    public static let headerName = "Device-Signature"
    public static let joseContentType = "application/jose;charset=UTF-8"
    public static let maximumRequestIDLength = 64

    public struct Claims: Codable, Hashable, Sendable {
        public var dispatchTargetId: String
        public var requestId: String
        public var creationTimeInEpochMillis: Int64
        /// The HTTP method of the signed request, upper case.
        public var htm: String?
        /// The path of the signed request as the device sends it (percent-encoded, without the query).
        public var htu: String?
        /// base64url SHA-256 of the request body (of no bytes for an empty one); absent when the JWS is the body.
        public var bodyHash: String?

        public init(
            dispatchTargetId: String, requestId: String, creationTimeInEpochMillis: Int64,
            htm: String? = nil, htu: String? = nil, bodyHash: String? = nil
        ) {
            self.dispatchTargetId = dispatchTargetId
            self.requestId = requestId
            self.creationTimeInEpochMillis = creationTimeInEpochMillis
            self.htm = htm
            self.htu = htu
            self.bodyHash = bodyHash
        }
        /// Fresh claims for one request to `path` with `method`, created `now`; `body` for a signature in the
        /// header, nil when the JWS is itself the body.
        public init(dispatchTargetId: String, now: Date, method: String, path: String, body: [UInt8]?) {
            self.init(
                dispatchTargetId: dispatchTargetId, requestId: UUID().uuidString.lowercased(),
                creationTimeInEpochMillis: Int64((now.timeIntervalSince1970 * 1000).rounded(.down)),
                htm: method, htu: path, bodyHash: body.map(DeviceSignature.bodyHash))
        }
    }

    /// The ``Claims/bodyHash`` of `body`.
    public static func bodyHash(_ body: [UInt8]) -> String { Base64URL.encode(Array(SHA256.hash(data: body))) }

    /// The ``Claims/htu`` of `url`: its percent-encoded path.
    public static func path(of url: URL) -> String {
        URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? url.path
    }

    /// Signs `payload` (a ``Claims`` or a type that embeds its members).
    public static func sign<Payload: Encodable>(_ payload: Payload, dispatchTargetId: String, key: P256.Signing.PrivateKey) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try JWS.sign(Array(try encoder.encode(payload)), header: JWSHeader(kid: dispatchTargetId), key: key)
    }

    /// The dispatch target a JWS names in its payload, read *before* verification to find the key to verify with.
    /// Nothing else of an unverified token is used.
    public static func unverifiedTargetID(_ compact: String) -> String? {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].utf8.count <= 8192, let bytes = Primitives.Base64URL.decodeBytes(String(parts[1])),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(bytes))
        else { return nil }
        return claims.dispatchTargetId
    }
}
