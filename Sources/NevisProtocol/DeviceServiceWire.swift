import Foundation
import Primitives

/// The Device Service (server-api.md §A.5, §B.9), our wire contract where nevisFIDO's is unknown (§(f).4). Every
/// request carries a ``DeviceSignature`` in the `Device-Signature` header, signed with the key of one of the device's
/// dispatch targets; that target must belong to the device the path names. Bodies are plain JSON over TLS: the
/// answers hold nothing the device does not already know or may not see, and the request's own JWS carries
/// everything the server acts on (a PATCH's changes are members of the signed payload, so nothing unsigned is
/// ever applied).
///
/// | Method | Path | Signed payload | Answer |
/// |---|---|---|---|
/// | GET | `/nevisfido/devices/credentials/{deviceId}` | ``DeviceSignature/Claims`` | 200 ``Credentials`` |
/// | PATCH | `/nevisfido/devices/credentials/{deviceId}` | ``Modification`` | 204 |
/// | DELETE | `/nevisfido/devices/credentials/{deviceId}` | ``DeviceSignature/Claims`` | 204 |
/// | GET | `/nevisfido/devices/operations/{deviceId}` | ``DeviceSignature/Claims`` | 200 ``PendingOperations`` |
public enum DeviceServiceWire {
    /// The SDK's `deviceResourcePath` default, below the server's origin.
    public static let basePath = "/nevisfido/devices/"
    public static let credentialsComponent = "credentials"
    public static let operationsComponent = "operations"

    /// The UAF registration response header extension (uaf-spec `Extension`) that names the registering device, so
    /// the Device Service can list a device's credentials. `fail_if_unknown` is false: another server ignores it.
    public static let deviceIDExtension = "ch.nevis.mauth.device-id"
    public static let maximumDeviceIDLength = 128

    /// Whether `deviceId` is one the server keeps: 1...``maximumDeviceIDLength`` bytes without control characters,
    /// whether a registration's extension or a dispatch target names it (it is written into logs and compared as is).
    public static func isValid(deviceId: String) -> Bool {
        !deviceId.isEmpty && deviceId.utf8.count <= maximumDeviceIDLength && !Text.hasControlCharacters(deviceId)
    }

    /// GET credentials: the device's dispatch targets (one per user) and the UAF credentials it registered.
    public struct Credentials: Codable, Hashable, Sendable {
        public struct Target: Codable, Hashable, Sendable {
            public var id: String
            public var extId: String
            public var username: String
            public var name: String
            public var dispatcher: String
            /// The push address (FCM registration token); absent when push is off.
            public var target: String?
            public init(id: String, extId: String, username: String, name: String, dispatcher: String, target: String?) {
                self.id = id
                self.extId = extId
                self.username = username
                self.name = name
                self.dispatcher = dispatcher
                self.target = target
            }
        }
        public struct Credential: Codable, Hashable, Sendable {
            public var username: String
            public var aaid: String
            /// base64url, as in UAF messages.
            public var keyId: String
            public var creationTimeInEpochMillis: Int64
            public init(username: String, aaid: String, keyId: String, creationTimeInEpochMillis: Int64) {
                self.username = username
                self.aaid = aaid
                self.keyId = keyId
                self.creationTimeInEpochMillis = creationTimeInEpochMillis
            }
        }
        public var deviceId: String
        public var dispatchTargets: [Target]
        public var credentials: [Credential]
        public init(deviceId: String, dispatchTargets: [Target], credentials: [Credential]) {
            self.deviceId = deviceId
            self.dispatchTargets = dispatchTargets
            self.credentials = credentials
        }
    }

    /// PATCH credentials: the signed payload. It changes every dispatch target of the device; an absent member is
    /// left as it is, `disablePushNotifications` removes the push address.
    public struct Modification: Codable, Hashable, Sendable {
        public var dispatchTargetId: String
        public var requestId: String
        public var creationTimeInEpochMillis: Int64
        public var name: String?
        public var fcmRegistrationToken: String?
        public var disablePushNotifications: Bool?
        public var htm: String?
        public var htu: String?
        public var bodyHash: String?

        public init(claims: DeviceSignature.Claims, name: String? = nil, fcmRegistrationToken: String? = nil, disablePushNotifications: Bool? = nil) {
            dispatchTargetId = claims.dispatchTargetId
            requestId = claims.requestId
            creationTimeInEpochMillis = claims.creationTimeInEpochMillis
            htm = claims.htm
            htu = claims.htu
            bodyHash = claims.bodyHash
            self.name = name
            self.fcmRegistrationToken = fcmRegistrationToken
            self.disablePushNotifications = disablePushNotifications
        }
    }

    /// GET operations: the device's out-of-band operations that are neither redeemed nor expired, oldest first.
    public struct PendingOperations: Codable, Hashable, Sendable {
        public struct Operation: Codable, Hashable, Sendable {
            public var creationTimeInEpochMillis: Int64
            public var dispatcher: String
            public var dispatchTargetId: String
            /// The out-of-band payload exactly as dispatched: the JSON text ``DispatchPayload`` parses (always the
            /// encrypted form, since the operation was dispatched to a target).
            public var payload: String
            /// The `dispatchInformation` JSON text of the dispatch request (for push, the notification), if any.
            public var dispatchInformation: String?
            /// What the operation is for, so that a device can list it before it opens one (our contract; a server
            /// that leaves them out is read as before): the UAF operation (`Reg`, `Auth`, `Dereg`), the user it was
            /// dispatched for, and the text/plain transaction text it asks to confirm, exactly as dispatched. Only the
            /// device the operation was dispatched to reads them (the request is device-signed), and it would read
            /// them on redeeming anyway; the text it confirms is the one the redeemed request carries.
            public var operation: String?
            public var username: String?
            public var transactionText: String?
            public init(
                creationTimeInEpochMillis: Int64, dispatcher: String, dispatchTargetId: String, payload: String, dispatchInformation: String?,
                operation: String? = nil, username: String? = nil, transactionText: String? = nil
            ) {
                self.creationTimeInEpochMillis = creationTimeInEpochMillis
                self.dispatcher = dispatcher
                self.dispatchTargetId = dispatchTargetId
                self.payload = payload
                self.dispatchInformation = dispatchInformation
                self.operation = operation
                self.username = username
                self.transactionText = transactionText
            }
        }
        public var operations: [Operation]
        public init(operations: [Operation]) { self.operations = operations }
    }
}
