import Crypto
import Foundation
import JOSE
import NevisProtocol
import UAF

/// The device's two P-256 key pairs of its device information (server-api §C.3, §C.4): one signs its JWS requests
/// to the device and dispatch-target services, one receives encrypted out-of-band payloads. They are made with the
/// device information at the first registration, kept encrypted in the SDK's SecureStorage (`device/keys`), shared
/// by every account and server of the device, and deleted with the last authenticator.
package struct DeviceKeys: Codable, Sendable {
    package static let entry = "device/keys"
    /// Raw P-256 scalars.
    var signing: [UInt8]
    var encryption: [UInt8]

    static func generate() -> DeviceKeys {
        DeviceKeys(signing: Array(P256.Signing.PrivateKey().rawRepresentation), encryption: Array(P256.KeyAgreement.PrivateKey().rawRepresentation))
    }

    package func signingKey() throws -> P256.Signing.PrivateKey { try P256.Signing.PrivateKey(rawRepresentation: signing) }
    package func encryptionKey() throws -> P256.KeyAgreement.PrivateKey { try P256.KeyAgreement.PrivateKey(rawRepresentation: encryption) }
}
