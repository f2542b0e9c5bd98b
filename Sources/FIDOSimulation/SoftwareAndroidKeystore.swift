import Crypto
import FIDOAttestation
import Foundation
import Primitives
import SwiftASN1
import UAF
import X509

/// Android's hardware Keystore in software, for tests: a vendor root and a batch key that certify each UAF key with
/// Android's key attestation extension, as a phone's secure hardware does for a full basic UAF registration. The
/// extension names what the Android system and the hardware wrote: the app the key was made for
/// (`attestationApplicationId`) and the boot the hardware saw (`rootOfTrust`). A server trusts the chain only through
/// ``metadataStatement(aaid:)``, whose vendor root key is this keystore's, never Google's.
public struct SoftwareAndroidKeystore: Sendable {
    let rootKey: P256.Signing.PrivateKey
    let root: Certificate
    let batchKey: P256.Signing.PrivateKey
    let batch: Certificate

    /// A keystore whose certificates are valid from an hour before `now` for a year.
    public init(now: Date = Date()) throws {
        rootKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("mauth simulated Android hardware attestation root (not Google)") }
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(365 * 86_400), issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 1))
                Critical(KeyUsage(keyCertSign: true))
            }, issuerPrivateKey: .init(rootKey))
        batchKey = P256.Signing.PrivateKey()
        batch = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(batchKey.publicKey), notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(365 * 86_400), issuer: rootName,
            subject: try DistinguishedName { CommonName("mauth simulated Keystore batch key") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            }, issuerPrivateKey: .init(rootKey))
    }

    /// The metadata statement of an Android hardware authenticator `aaid` (full basic attestation, ECDSA P-256) whose
    /// keys this keystore attests: its vendor root key is the keystore's root.
    public func metadataStatement(aaid: String) -> MetadataStatement {
        MetadataStatement(
            aaid: aaid, description: "mauth simulated Android hardware-backed authenticator", attestationTypes: [15879],
            userVerificationDetails: [[.init(userVerification: 2)]], authenticationAlgorithm: 2, keyProtection: 6, matcherProtection: 2,
            publicKeyAlgAndEncoding: 257, vendorRootKeys: [rootKey.publicKey.derRepresentation.base64EncodedString()])
    }

    /// The RegistrationResponse of `authenticator` to `request`, its key attested by this keystore (full basic
    /// attestation: the key signs, its certificate chain leads to the root) with `application` and `rootOfTrust` in
    /// the key attestation extension (each left out when nil).
    public func register(
        _ authenticator: SoftwareAuthenticator, _ request: RegistrationRequest, serverAppID: String,
        application: AndroidKeyDescription.ApplicationID?, rootOfTrust: AndroidKeyDescription.RootOfTrust?, now: Date = Date()
    ) throws -> RegistrationResponse {
        let fc = authenticator.fcParams(appID: request.header.appID, challenge: request.challenge, serverAppID: serverAppID)
        let hash = FinalChallengeParams.hash(fcParams: fc)
        var description = AndroidKeyDescription(
            attestationSecurityLevel: .trustedEnvironment, attestationChallenge: hash, hardwarePurposes: [AndroidKeyDescription.purposeSign],
            hardwareOrigin: AndroidKeyDescription.originGenerated)
        description.applicationID = application
        description.rootOfTrust = rootOfTrust
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(authenticator.key.publicKey), notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(86_400), issuer: batch.subject,
            subject: try DistinguishedName { CommonName("Android Keystore Key") }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init {
                Critical(BasicConstraints.notCertificateAuthority)
                Certificate.Extension(oid: AndroidKeyDescription.oid, critical: false, value: ArraySlice(try description.derEncoded()))
            }, issuerPrivateKey: .init(batchKey))
        let krd = KeyRegistrationData(
            aaid: authenticator.aaid, authenticatorVersion: 1, signatureAlgorithm: .secp256r1ECDSASHA256DER, publicKeyEncoding: .eccX962DER,
            finalChallengeHash: hash, keyID: authenticator.keyID, signCounter: 0, registrationCounter: 1,
            publicKey: Array(authenticator.key.publicKey.derRepresentation))
        let assertion = try AssertionBuilder.registration(
            krd, attestationCertificates: [try Self.der(leaf), try Self.der(batch), try Self.der(root)],
            sign: AssertionBuilder.p256Signer(authenticator.key, algorithm: .secp256r1ECDSASHA256DER))
        var header = request.header
        header.exts = nil
        return RegistrationResponse(header: header, fcParams: fc, assertions: [.init(assertion: Base64URL.encode(assertion))])
    }

    static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}
