import Crypto
import FIDOAttestation
import Foundation
import X509

/// `fido-u2f` (WebAuthn §8.6): a U2F authenticator's registration signature, by its one attestation certificate.
enum FIDOU2FAttestation {
    static func verify(_ input: AttestationInput) throws(AttestationStatementError) -> VerifiedAttestation {
        let members = try StatementMembers("fido-u2f", input.statement)
        try members.only(["sig", "x5c"])
        let sig = try members.bytes("sig")
        let (certificates, der) = try members.certificates()
        // Step 1: exactly one certificate, holding a P-256 key.
        guard certificates.count == 1 else { throw members.fail(.memberUnexpected("x5c with \(certificates.count) certificates (exactly 1)")) }
        guard P256.Signing.PublicKey(certificates[0].publicKey) != nil else {
            throw members.fail(.certificateKeyUnsuitable("is not an EC P-256 key"))
        }
        // Step 2: U2F keys are P-256, sent as the uncompressed point.
        let credentialKey = input.credential.publicKey
        guard credentialKey.algorithm == .es256, let point = credentialKey.uncompressedPoint else {
            throw members.fail(.algorithmMismatch(statement: COSEAlgorithm.es256.rawValue, credential: credentialKey.algorithm.rawValue))
        }
        // Step 3: the U2F registration signature over 0x00 ‖ rpIdHash ‖ clientDataHash ‖ credentialId ‖ publicKeyU2F.
        let signed = [0x00] + input.authenticatorData.rpIDHash + input.clientDataHash + input.credential.credentialID + point
        let key = try members.signingKey(certificates[0], algorithm: COSEAlgorithm.es256.rawValue)
        guard key.isValidSignature(sig, for: signed) else { throw members.fail(.signatureInvalid) }
        // A U2F authenticator has no AAGUID and its signature does not cover one: a non-zero AAGUID is a claim nothing
        // signs, which would let a U2F key register as any FIDO2 model an allow-list names.
        guard input.credential.aaguid == AAGUID.zero else { throw members.fail(.aaguidNotZero) }
        return VerifiedAttestation(
            format: "fido-u2f", type: .basic, certificates: certificates, trustPath: der,
            modelBinding: .keyIdentifier(keyIdentifier(of: certificates[0])))
    }

    /// The certificate's key identifier as the Metadata Service lists U2F models (`attestationCertificateKeyIdentifiers`):
    /// the lower-case hex SHA-1 of the subjectPublicKey BIT STRING's bits (RFC 5280 §4.2.1.2, method 1).
    static func keyIdentifier(of certificate: Certificate) -> String {
        SubjectKeyIdentifier(hash: certificate.publicKey).keyIdentifier.map { String(format: "%02x", $0) }.joined()
    }
}
