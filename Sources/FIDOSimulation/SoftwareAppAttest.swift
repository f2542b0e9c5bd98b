import AppAttestation
import CBOR
import Crypto
import Foundation
import NevisProtocol
import Primitives
import SwiftASN1
import UAF
import WebAuthn
import X509

/// Apple's App Attest in software, for tests, `mauth device` and `mauth demo`: a certificate authority of its own
/// (a root and an intermediate, P-256) that certifies App Attest keys as Apple's does, with the same nonce
/// extension, authenticator data and CBOR. A server trusts what it makes only when its root is configured, which
/// a production server never does: the root's key lives in this process.
public struct SoftwareAppAttestAuthority: Sendable {
    public let rootCertificate: Certificate
    let intermediateCertificate: Certificate
    let intermediateKey: P256.Signing.PrivateKey

    /// The root, PEM, to configure as a server's App Attest root.
    public var rootPEM: String {
        // Serializing a certificate this process made cannot fail.
        try! rootCertificate.serializeAsPEM().pemString
    }

    /// The virtual device's app as App Attest names it (Team ID `ABCDE12345`, bundle ID of
    /// `SoftwareAuthenticator.virtualDeviceFacetID`): what `mauth demo`, `mauth load` and `mauth device` attest.
    public static let virtualDeviceTeamID = "ABCDE12345"
    public static let virtualDeviceBundleID = "ch.nevis.mauth.virtualdevice"
    public static var virtualDeviceAppID: String { "\(virtualDeviceTeamID).\(virtualDeviceBundleID)" }

    /// The authority as one PEM text, to attest again later under the same root (``init(pemBundle:)``): the
    /// intermediate's private key (PKCS#8), then the intermediate and root certificates. The root's key is not in it
    /// (nothing needs it after the intermediate is issued). A private key: keep the file as one.
    public var pemBundle: String {
        // Serializing what this process made cannot fail.
        [intermediateKey.pemRepresentation, try! intermediateCertificate.serializeAsPEM().pemString, rootPEM].joined(separator: "\n") + "\n"
    }

    /// The authority ``pemBundle`` wrote; throws `AuthorityBundleError` for any other text.
    public init(pemBundle: String) throws {
        guard let documents = try? PEMDocument.parseMultiple(pemString: pemBundle), !documents.isEmpty else {
            throw AuthorityBundleError("is not PEM")
        }
        let keys = documents.filter { $0.discriminator == "PRIVATE KEY" }
        let certificates = try documents.filter { $0.discriminator == "CERTIFICATE" }.map { try Certificate(derEncoded: $0.derBytes) }
        guard keys.count == 1, certificates.count == 2 else {
            throw AuthorityBundleError("must hold one PRIVATE KEY and two CERTIFICATEs (the intermediate, then the root)")
        }
        let key: P256.Signing.PrivateKey
        do { key = try P256.Signing.PrivateKey(derRepresentation: keys[0].derBytes) } catch {
            throw AuthorityBundleError("holds a private key that is not P-256")
        }
        guard certificates[1].subject == certificates[1].issuer, certificates[0].issuer == certificates[1].subject else {
            throw AuthorityBundleError("does not hold an intermediate issued by a self-signed root")
        }
        guard certificates[0].publicKey == Certificate.PublicKey(key.publicKey) else {
            throw AuthorityBundleError("holds a private key that is not the intermediate's")
        }
        (intermediateKey, intermediateCertificate, rootCertificate) = (key, certificates[0], certificates[1])
    }

    /// A new authority, its certificates valid from `notBefore` for twenty years.
    public init(notBefore: Date = Date(timeIntervalSince1970: 1_700_000_000)) throws {
        let rootKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName {
            CommonName("mauth simulated App Attestation Root CA")
            OrganizationName("mauth simulation (not Apple)")
        }
        let notAfter = notBefore.addingTimeInterval(20 * 365 * 86_400)
        rootCertificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: notBefore, notValidAfter: notAfter,
            issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }, issuerPrivateKey: .init(rootKey))
        intermediateKey = P256.Signing.PrivateKey()
        intermediateCertificate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: notBefore, notValidAfter: notAfter,
            issuer: rootName,
            subject: try DistinguishedName {
                CommonName("mauth simulated App Attestation CA 1")
                OrganizationName("mauth simulation (not Apple)")
            }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }, issuerPrivateKey: .init(rootKey))
    }

    /// The attestation object `DCAppAttestService.attestKey` returns for `key`, made at `now` for `appID` in
    /// `environment` over `clientDataHash`. `counter` other than 0 makes an object Apple never makes, for tests.
    public func attest(
        _ key: SoftwareAppAttestKey, appID: String, environment: AppAttestEnvironment, clientDataHash: [UInt8], now: Date = Date(),
        counter: UInt32 = 0
    ) throws -> [UInt8] {
        let keyID = key.keyID
        var authData = Array(SHA256.hash(data: Array(appID.utf8)))
        authData.append(0x40)  // AT, as Apple sets it: App Attest keys are used without user presence.
        authData += SoftwareAppAttestKey.bigEndian(counter)
        authData += environment.aaguid
        authData += [UInt8(keyID.count >> 8), UInt8(keyID.count & 0xff)] + keyID
        authData += COSEKey(key.privateKey.publicKey).encoded
        let nonce = Array(SHA256.hash(data: authData + clientDataHash))
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { sequence in
            try sequence.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)) { explicit in
                try explicit.serialize(ASN1OctetString(contentBytes: ArraySlice(nonce)))
            }
        }
        let nonceExtension = Certificate.Extension(
            oid: [1, 2, 840, 113635, 100, 8, 2], critical: false, value: ArraySlice(serializer.serializedBytes))
        // Apple's leaves live three days from about a day before the attestation.
        let leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(key.privateKey.publicKey), notValidBefore: now.addingTimeInterval(-86_400),
            notValidAfter: now.addingTimeInterval(2 * 86_400), issuer: intermediateCertificate.subject,
            subject: try DistinguishedName {
                CommonName(keyID.map { String(format: "%02x", $0) }.joined())
                OrganizationalUnitName("AAA Certification")
                OrganizationName("mauth simulation (not Apple)")
            }, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try .init {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                nonceExtension
            }, issuerPrivateKey: .init(intermediateKey))
        let statement = CBORMap([
            .init(.text("x5c"), .array([.bytes(Self.der(leaf)), .bytes(Self.der(intermediateCertificate))])),
            .init(.text("receipt"), .bytes(Array("mauth simulated receipt for \(appID)".utf8))),
        ])
        return CBOREncoder.encode(
            .map(
                CBORMap([
                    .init(.text("fmt"), .text("apple-appattest")), .init(.text("attStmt"), .map(statement)),
                    .init(.text("authData"), .bytes(authData)),
                ])))
    }

    static func der(_ certificate: Certificate) -> [UInt8] {
        var serializer = DER.Serializer()
        try! serializer.serialize(certificate)
        return serializer.serializedBytes
    }
}

/// An App Attest key in software: what the Secure Enclave holds for one app install.
public struct SoftwareAppAttestKey: Sendable {
    public let privateKey: P256.Signing.PrivateKey

    public init(privateKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) { self.privateKey = privateKey }

    /// SHA-256 of the public key (X9.62 uncompressed), as `DCAppAttestService.generateKey` names it.
    public var keyID: [UInt8] { Array(SHA256.hash(data: privateKey.publicKey.x963Representation)) }

    /// The assertion `DCAppAttestService.generateAssertion` returns: CBOR {signature, authenticatorData}, the
    /// signature ECDSA P-256 over SHA-256(authenticatorData ‖ clientDataHash).
    public func assertion(appID: String, counter: UInt32, clientDataHash: [UInt8]) throws -> [UInt8] {
        let authenticatorData = Array(SHA256.hash(data: Array(appID.utf8))) + [0x40] + Self.bigEndian(counter)
        let nonce = Array(SHA256.hash(data: authenticatorData + clientDataHash))
        let signature = Array(try privateKey.signature(for: nonce).derRepresentation)
        return CBOREncoder.encode(
            .map(CBORMap([.init(.text("signature"), .bytes(signature)), .init(.text("authenticatorData"), .bytes(authenticatorData))])))
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }
}

/// Why a text is not an App Attest authority's PEM bundle (``SoftwareAppAttestAuthority/init(pemBundle:)``).
public struct AuthorityBundleError: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    init(_ reason: String) { self.reason = reason }
    public var description: String { "the App Attest authority bundle \(reason)" }
}

/// An app's side of the server's app attestation (`NevisProtocol/AppAttestationWire`), in software: one App Attest
/// key for one app install, attested by `authority` the first time the app answers and asserting afterwards with a
/// counter that rises by one each time.
public struct SoftwareAppAttestation: Sendable {
    public let authority: SoftwareAppAttestAuthority
    public let key: SoftwareAppAttestKey
    public let appID: String
    public let environment: AppAttestEnvironment
    /// The counter of the last assertion; 0 before the first.
    public private(set) var counter: UInt32 = 0
    /// Whether the key's attestation was sent (the next answer asserts).
    public private(set) var attested = false

    public init(
        authority: SoftwareAppAttestAuthority, appID: String, environment: AppAttestEnvironment = .development,
        key: SoftwareAppAttestKey = SoftwareAppAttestKey()
    ) {
        self.authority = authority
        self.appID = appID
        self.environment = environment
        self.key = key
    }

    /// The response header's extension for a response with `fcParams`: the attestation the first time, an
    /// assertion afterwards.
    public mutating func answer(fcParams: String, now: Date = Date()) throws -> Extension {
        let hash = AppAttestationWire.clientDataHash(fcParams: fcParams)
        let keyID = Base64URL.encode(key.keyID)
        if !attested {
            attested = true
            let object = try authority.attest(key, appID: appID, environment: environment, clientDataHash: hash, now: now)
            return try AppAttestationWire.Answer(platform: "apple", keyId: keyID, attestation: Base64URL.encode(object)).headerExtension()
        }
        counter += 1
        let assertion = try key.assertion(appID: appID, counter: counter, clientDataHash: hash)
        return try AppAttestationWire.Answer(platform: "apple", keyId: keyID, assertion: Base64URL.encode(assertion)).headerExtension()
    }
}
