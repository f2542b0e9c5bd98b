import Foundation

/// One entry of `userVerificationDetails` (numeric metadata form).
public struct VerificationMethodDescriptor: Codable, Hashable, Sendable {
    public var userVerification: UInt32
    public init(userVerification: UInt32) { self.userVerification = userVerification }
}

/// A FIDO UAF metadata statement in the numeric ("v2") form used by nevisFIDO and the seed documentation
/// (uaf-spec §6). Two optional list fields extend it: `authenticationAlgorithms` and `publicKeyAlgAndEncodings`
/// name further algorithms/encodings the authenticator may use besides the single `authenticationAlgorithm` /
/// `publicKeyAlgAndEncoding` (the Android authenticators support both ECDSA and RSA, per the seed's table).
public struct MetadataStatement: Codable, Hashable, Sendable {
    public var aaid: String
    public var description: String
    public var assertionScheme: String
    public var attestationRootCertificates: [String]
    public var attestationTypes: [UInt16]
    public var upv: [Version]
    public var userVerificationDetails: [[VerificationMethodDescriptor]]
    public var attachmentHint: UInt32
    public var authenticationAlgorithm: UInt16
    public var authenticationAlgorithms: [UInt16]?
    public var authenticatorVersion: UInt16
    public var isSecondFactorOnly: Bool
    public var keyProtection: UInt16
    public var matcherProtection: UInt16
    public var publicKeyAlgAndEncoding: UInt16
    public var publicKeyAlgAndEncodings: [UInt16]?
    public var tcDisplay: UInt16
    public var tcDisplayContentType: String?
    /// Vendor root public keys (base64 DER SubjectPublicKeyInfo) for full basic attestation through Android key
    /// attestation: the Nevis extension `nevis.auth.fido.uaf.google-attestation-root-keys`, tried before
    /// `attestationRootCertificates` (server-api E.1). Google publishes its hardware attestation roots' keys.
    public var vendorRootKeys: [String]?

    enum CodingKeys: String, CodingKey {
        case aaid, description, assertionScheme, attestationRootCertificates, attestationTypes, upv, userVerificationDetails
        case attachmentHint, authenticationAlgorithm, authenticationAlgorithms, authenticatorVersion, isSecondFactorOnly
        case keyProtection, matcherProtection, publicKeyAlgAndEncoding, publicKeyAlgAndEncodings, tcDisplay, tcDisplayContentType
        case vendorRootKeys = "nevis.auth.fido.uaf.google-attestation-root-keys"
    }

    public init(
        aaid: String, description: String, assertionScheme: String = AssertionScheme.uafV1TLV,
        attestationRootCertificates: [String] = [], attestationTypes: [UInt16], upv: [Version] = [.uaf11],
        userVerificationDetails: [[VerificationMethodDescriptor]], attachmentHint: UInt32 = 1,
        authenticationAlgorithm: UInt16, authenticationAlgorithms: [UInt16]? = nil, authenticatorVersion: UInt16 = 1,
        isSecondFactorOnly: Bool = false, keyProtection: UInt16, matcherProtection: UInt16,
        publicKeyAlgAndEncoding: UInt16, publicKeyAlgAndEncodings: [UInt16]? = nil, tcDisplay: UInt16 = 1,
        tcDisplayContentType: String? = "text/plain", vendorRootKeys: [String]? = nil
    ) {
        self.aaid = aaid
        self.description = description
        self.assertionScheme = assertionScheme
        self.attestationRootCertificates = attestationRootCertificates
        self.attestationTypes = attestationTypes
        self.upv = upv
        self.userVerificationDetails = userVerificationDetails
        self.attachmentHint = attachmentHint
        self.authenticationAlgorithm = authenticationAlgorithm
        self.authenticationAlgorithms = authenticationAlgorithms
        self.authenticatorVersion = authenticatorVersion
        self.isSecondFactorOnly = isSecondFactorOnly
        self.keyProtection = keyProtection
        self.matcherProtection = matcherProtection
        self.publicKeyAlgAndEncoding = publicKeyAlgAndEncoding
        self.publicKeyAlgAndEncodings = publicKeyAlgAndEncodings
        self.tcDisplay = tcDisplay
        self.tcDisplayContentType = tcDisplayContentType
        self.vendorRootKeys = vendorRootKeys
    }

    /// Every signature algorithm this authenticator may use.
    public var supportedAlgorithms: Set<SignatureAlgorithm> {
        Set(([authenticationAlgorithm] + (authenticationAlgorithms ?? [])).map(SignatureAlgorithm.init(rawValue:)))
    }

    /// Every public key encoding this authenticator may use.
    public var supportedKeyEncodings: Set<PublicKeyEncoding> {
        Set(([publicKeyAlgAndEncoding] + (publicKeyAlgAndEncodings ?? [])).map(PublicKeyEncoding.init(rawValue:)))
    }

    /// The union of all user verification methods the statement lists.
    public var userVerificationMethods: UserVerificationMethods {
        UserVerificationMethods(rawValue: userVerificationDetails.joined().reduce(0) { $0 | $1.userVerification })
    }

    /// The capabilities policy matching uses.
    public var capabilities: AuthenticatorCapabilities {
        AuthenticatorCapabilities(
            aaid: aaid, authenticatorVersion: authenticatorVersion, userVerification: userVerificationMethods,
            keyProtection: KeyProtection(rawValue: keyProtection), matcherProtection: MatcherProtection(rawValue: matcherProtection),
            attachmentHint: AttachmentHint(rawValue: attachmentHint), tcDisplay: TransactionConfirmationDisplay(rawValue: tcDisplay),
            authenticationAlgorithms: supportedAlgorithms, assertionScheme: assertionScheme,
            attestationTypes: Set(attestationTypes))
    }
}
