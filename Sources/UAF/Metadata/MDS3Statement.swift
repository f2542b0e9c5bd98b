import Foundation

/// A metadata statement in the FIDO Metadata Service v3 form (MDS3, "Metadata Statement" §4), where the registry
/// values are strings (`"secp256r1_ecdsa_sha256_der"`, `"passcode_internal"`, `["hardware", "tee"]`) instead of
/// numbers. Only `protocolFamily: "uaf"` statements describe UAF authenticators; ``UAFMetadata/parse(json:)``
/// skips the others. Each value converts to the numeric form (``MetadataStatement``) through ``MDS3Names``, so
/// verification and policy matching see one representation.
struct MDS3Statement: Decodable, Sendable {
    struct Method: Decodable { var userVerificationMethod: String }
    var aaid: String?
    var description: String
    var protocolFamily: String
    var authenticatorVersion: UInt32
    var upv: [Version]
    var authenticationAlgorithms: [String]
    var publicKeyAlgAndEncodings: [String]
    var attestationTypes: [String]
    var userVerificationDetails: [[Method]]
    var keyProtection: [String]
    var matcherProtection: [String]
    var attachmentHint: [String]
    var tcDisplay: [String]
    var tcDisplayContentType: String?
    var attestationRootCertificates: [String]
    var isSecondFactorOnly: Bool?
    var assertionScheme: String?

    /// The numeric form, or a reason why the statement cannot describe a UAF authenticator.
    func numeric() throws(UAFMetadata.LoadError) -> MetadataStatement {
        guard let aaid else { throw .invalidJSON("a UAF statement needs an aaid") }
        func each<T>(_ names: [String], _ table: [String: T], _ field: String) throws(UAFMetadata.LoadError) -> [T] {
            var values: [T] = []
            for name in names {
                guard let value = table[name] else { throw .invalidJSON("\(aaid): unknown \(field) \"\(name)\"") }
                values.append(value)
            }
            return values
        }
        func bits(_ names: [String], _ table: [String: UInt32], _ field: String) throws(UAFMetadata.LoadError) -> UInt32 {
            try each(names, table, field).reduce(0, |)
        }
        let algorithms = try each(authenticationAlgorithms, MDS3Names.authenticationAlgorithms, "authenticationAlgorithms")
        let encodings = try each(publicKeyAlgAndEncodings, MDS3Names.publicKeyAlgAndEncodings, "publicKeyAlgAndEncodings")
        guard let algorithm = algorithms.first, let encoding = encodings.first else {
            throw .invalidJSON("\(aaid): authenticationAlgorithms and publicKeyAlgAndEncodings must not be empty")
        }
        guard authenticatorVersion <= UInt32(UInt16.max) else { throw .invalidJSON("\(aaid): authenticatorVersion over 65535") }
        var details: [[VerificationMethodDescriptor]] = []
        for combination in userVerificationDetails {
            var descriptors: [VerificationMethodDescriptor] = []
            for method in combination {
                guard let value = MDS3Names.userVerificationMethods[method.userVerificationMethod] else {
                    throw .invalidJSON("\(aaid): unknown userVerificationMethod \"\(method.userVerificationMethod)\"")
                }
                descriptors.append(VerificationMethodDescriptor(userVerification: value))
            }
            details.append(descriptors)
        }
        return MetadataStatement(
            aaid: aaid, description: description, assertionScheme: assertionScheme ?? AssertionScheme.uafV1TLV,
            attestationRootCertificates: attestationRootCertificates,
            attestationTypes: try each(attestationTypes, MDS3Names.attestationTypes, "attestationTypes"), upv: upv,
            userVerificationDetails: details,
            attachmentHint: try bits(attachmentHint, MDS3Names.attachmentHints, "attachmentHint"),
            authenticationAlgorithm: algorithm, authenticationAlgorithms: Array(algorithms.dropFirst()),
            authenticatorVersion: UInt16(authenticatorVersion), isSecondFactorOnly: isSecondFactorOnly ?? false,
            keyProtection: UInt16(try bits(keyProtection, MDS3Names.keyProtection, "keyProtection")),
            matcherProtection: UInt16(try bits(matcherProtection, MDS3Names.matcherProtection, "matcherProtection")),
            publicKeyAlgAndEncoding: encoding, publicKeyAlgAndEncodings: Array(encodings.dropFirst()),
            tcDisplay: UInt16(try bits(tcDisplay, MDS3Names.tcDisplay, "tcDisplay")), tcDisplayContentType: tcDisplayContentType)
    }
}

/// The FIDO Registry of Predefined Values' string names (as MDS3 writes them) for the numeric constants this
/// module defines in `Registry/`. Names not listed are refused rather than ignored, so a statement is never
/// loaded with less than it says.
enum MDS3Names {
    static let authenticationAlgorithms: [String: UInt16] = [
        "secp256r1_ecdsa_sha256_raw": SignatureAlgorithm.secp256r1ECDSASHA256Raw.rawValue,
        "secp256r1_ecdsa_sha256_der": SignatureAlgorithm.secp256r1ECDSASHA256DER.rawValue,
        "rsassa_pss_sha256_raw": SignatureAlgorithm.rsassaPSSSHA256Raw.rawValue,
        "rsassa_pss_sha256_der": SignatureAlgorithm.rsassaPSSSHA256DER.rawValue,
        "secp256k1_ecdsa_sha256_raw": SignatureAlgorithm.secp256k1ECDSASHA256Raw.rawValue,
        "secp256k1_ecdsa_sha256_der": SignatureAlgorithm.secp256k1ECDSASHA256DER.rawValue,
        "sm2_sm3_raw": SignatureAlgorithm.sm2SM3Raw.rawValue,
        "rsa_emsa_pkcs1_sha256_raw": SignatureAlgorithm.rsaEMSAPKCS1SHA256Raw.rawValue,
        "rsa_emsa_pkcs1_sha256_der": SignatureAlgorithm.rsaEMSAPKCS1SHA256DER.rawValue,
    ]
    static let publicKeyAlgAndEncodings: [String: UInt16] = [
        "ecc_x962_raw": PublicKeyEncoding.eccX962Raw.rawValue, "ecc_x962_der": PublicKeyEncoding.eccX962DER.rawValue,
        "rsa_2048_raw": PublicKeyEncoding.rsa2048Raw.rawValue, "rsa_2048_der": PublicKeyEncoding.rsa2048DER.rawValue,
        "cose": PublicKeyEncoding.cose.rawValue,
    ]
    static let attestationTypes: [String: UInt16] = [
        "basic_full": AttestationType.basicFull.rawValue, "basic_surrogate": AttestationType.basicSurrogate.rawValue,
        "ecdaa": AttestationType.ecdaa.rawValue, "attca": AttestationType.attCA.rawValue,
    ]
    static let userVerificationMethods: [String: UInt32] = [
        "presence_internal": UserVerificationMethods.presence.rawValue, "fingerprint_internal": UserVerificationMethods.fingerprint.rawValue,
        "passcode_internal": UserVerificationMethods.passcode.rawValue, "voiceprint_internal": UserVerificationMethods.voiceprint.rawValue,
        "faceprint_internal": UserVerificationMethods.faceprint.rawValue, "location_internal": UserVerificationMethods.location.rawValue,
        "eyeprint_internal": UserVerificationMethods.eyeprint.rawValue, "pattern_internal": UserVerificationMethods.pattern.rawValue,
        "handprint_internal": UserVerificationMethods.handprint.rawValue, "passcode_external": UserVerificationMethods.passcodeExternal.rawValue,
        "pattern_external": UserVerificationMethods.patternExternal.rawValue, "none": UserVerificationMethods.none.rawValue,
        "all": UserVerificationMethods.all.rawValue,
    ]
    static let keyProtection: [String: UInt32] = [
        "software": UInt32(KeyProtection.software.rawValue), "hardware": UInt32(KeyProtection.hardware.rawValue),
        "tee": UInt32(KeyProtection.tee.rawValue), "secure_element": UInt32(KeyProtection.secureElement.rawValue),
        "remote_handle": UInt32(KeyProtection.remoteHandle.rawValue),
    ]
    static let matcherProtection: [String: UInt32] = [
        "software": UInt32(MatcherProtection.software.rawValue), "tee": UInt32(MatcherProtection.tee.rawValue),
        "on_chip": UInt32(MatcherProtection.onChip.rawValue),
    ]
    static let attachmentHints: [String: UInt32] = [
        "internal": AttachmentHint.internal.rawValue, "external": AttachmentHint.external.rawValue, "wired": AttachmentHint.wired.rawValue,
        "wireless": AttachmentHint.wireless.rawValue, "nfc": AttachmentHint.nfc.rawValue, "bluetooth": AttachmentHint.bluetooth.rawValue,
        "network": AttachmentHint.network.rawValue, "ready": AttachmentHint.ready.rawValue, "wifi_direct": AttachmentHint.wifiDirect.rawValue,
    ]
    static let tcDisplay: [String: UInt32] = [
        "any": UInt32(TransactionConfirmationDisplay.any.rawValue),
        "privileged_software": UInt32(TransactionConfirmationDisplay.privilegedSoftware.rawValue),
        "tee": UInt32(TransactionConfirmationDisplay.tee.rawValue), "hardware": UInt32(TransactionConfirmationDisplay.hardware.rawValue),
        "remote": UInt32(TransactionConfirmationDisplay.remote.rawValue),
    ]
}
