import SwiftASN1
import X509

/// `packed` (WebAuthn §8.2): full attestation with a certificate chain, or self attestation with the credential key.
enum PackedAttestation {
    static func verify(_ input: AttestationInput) throws(AttestationStatementError) -> VerifiedAttestation {
        let members = try StatementMembers("packed", input.statement)
        try members.only(["alg", "sig", "x5c"])
        let alg = try members.int("alg")
        let sig = try members.bytes("sig")
        guard members.has("x5c") else {
            // Self attestation: the credential key signs, under its own algorithm.
            let key = input.credential.publicKey
            guard alg == key.algorithm.rawValue else { throw members.fail(.algorithmMismatch(statement: alg, credential: key.algorithm.rawValue)) }
            guard key.isValidSignature(sig, for: input.signedData) else { throw members.fail(.signatureInvalid) }
            return VerifiedAttestation(format: "packed", type: .self)
        }
        let (certificates, der) = try members.certificates()
        let leaf = certificates[0]
        // The signature first: a statement that the certificate's key did not sign says nothing about it.
        let key = try members.signingKey(leaf, algorithm: alg)
        guard key.isValidSignature(sig, for: input.signedData) else { throw members.fail(.signatureInvalid) }
        let namesModel = try checkCertificate(leaf, aaguid: input.credential.aaguid)
        return VerifiedAttestation(
            format: "packed", type: .basic, certificates: certificates, trustPath: der,
            modelBinding: namesModel ? .certificate : .attestationKey)
    }

    /// The packed attestation certificate's rules (§8.2.1); true when it names the model (its AAGUID extension).
    @discardableResult
    static func checkCertificate(_ certificate: Certificate, aaguid: [UInt8]) throws(AttestationStatementError) -> Bool {
        try AttestationCertificateRules.checkVersion3(certificate, format: "packed")
        var attributes: [ASN1ObjectIdentifier: [String]] = [:]
        for rdn in certificate.subject {
            for attribute in rdn { attributes[attribute.type, default: []].append(String(attribute.value) ?? "") }
        }
        func fail(_ rule: String) -> AttestationStatementError { AttestationStatementError("packed", .certificateRequirement(rule)) }
        guard let country = attributes[.RDNAttributeType.countryName]?.first, country.utf8.count == 2 else {
            throw fail("has no subject C (a two-letter country code)")
        }
        guard attributes[.RDNAttributeType.organizationName]?.first?.isEmpty == false else { throw fail("has no subject O") }
        guard attributes[.RDNAttributeType.organizationalUnitName]?.first == "Authenticator Attestation" else {
            throw fail("has no subject OU \"Authenticator Attestation\"")
        }
        guard attributes[.RDNAttributeType.commonName]?.first?.isEmpty == false else { throw fail("has no subject CN") }
        try AttestationCertificateRules.checkNotCA(certificate, format: "packed")
        return try AttestationCertificateRules.checkAAGUID(certificate, aaguid, format: "packed")
    }
}
