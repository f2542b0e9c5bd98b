import Foundation
import Primitives
import SQLKit
import UAF

/// A stored registration (uaf-spec §5, Registration step 4): the key as verification established it, one declaration
/// of its fields (`UAF.VerifiedRegistration`, read through this record as `record.aaid`), and what the server adds.
@dynamicMemberLookup
public struct RegistrationRecord: Sendable, Equatable {
    /// The key, with its AAID in its normalized form.
    public var key: VerifiedRegistration
    public var createdAt: Date
    /// The device that registered it, as its registration response named it (`NevisProtocol/DeviceServiceWire/deviceIDExtension`);
    /// nil when it did not. Only the Device Service reads it.
    public var deviceId: String?
    /// The app attestation the registration passed, as its audit line says it (`require: apple key … attested (…)`);
    /// nil when its request asked none.
    public var appAttestation: String?
    /// The App Attest key (base64url) of the app install that registered it, when it attested with App Attest.
    public var appAttestKeyID: String?

    public init(_ verified: VerifiedRegistration, createdAt: Date, deviceId: String? = nil) {
        key = verified
        key.aaid = AAID.normalized(verified.aaid)
        self.createdAt = createdAt
        self.deviceId = deviceId
    }

    public init(
        username: String, aaid: String, keyID: String, publicKey: [UInt8], publicKeyEncoding: PublicKeyEncoding,
        signatureAlgorithm: SignatureAlgorithm, signCounter: UInt32, registrationCounter: UInt32,
        authenticatorVersion: UInt16, attestationType: AttestationType, createdAt: Date, deviceId: String? = nil
    ) {
        key = VerifiedRegistration(
            aaid: aaid, keyID: keyID, publicKey: publicKey, publicKeyEncoding: publicKeyEncoding,
            signatureAlgorithm: signatureAlgorithm, signCounter: signCounter, registrationCounter: registrationCounter,
            authenticatorVersion: authenticatorVersion, attestationType: attestationType, username: username)
        self.createdAt = createdAt
        self.deviceId = deviceId
    }

    public subscript<Value>(dynamicMember field: WritableKeyPath<VerifiedRegistration, Value>) -> Value {
        get { key[keyPath: field] }
        set { key[keyPath: field] = newValue }
    }

    var registeredKey: RegisteredKey {
        RegisteredKey(
            aaid: key.aaid, keyID: key.keyID, username: key.username, publicKey: key.publicKey, publicKeyEncoding: key.publicKeyEncoding,
            signCounter: key.signCounter)
    }
}
