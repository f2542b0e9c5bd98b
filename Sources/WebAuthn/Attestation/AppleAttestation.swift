import Crypto
import FIDOAttestation
import SwiftASN1
import X509

/// `apple` (WebAuthn §8.8, Apple anonymous attestation): no signature; the credential certificate carries a nonce
/// bound to this registration and certifies the credential key itself.
enum AppleAttestation {
    static func verify(_ input: AttestationInput) throws(AttestationStatementError) -> VerifiedAttestation {
        let members = try StatementMembers("apple", input.statement)
        try members.only(["x5c"])
        let (certificates, der) = try members.certificates()
        let leaf = certificates[0]
        // Steps 1–3: the nonce is SHA-256(authData ‖ clientDataHash), as the certificate's extension says.
        let nonce = Array(SHA256.hash(data: input.signedData))
        guard let value = leaf.extensions[oid: AppleNonceExtension.oid]?.value else {
            throw members.fail(.certificateRequirement("has no nonce extension (1.2.840.113635.100.8.2)"))
        }
        guard let certified = AppleNonceExtension.nonce(in: value) else {
            throw members.fail(.certificateRequirement("has a nonce extension that is not SEQUENCE { [1] OCTET STRING }"))
        }
        guard certified == nonce else { throw members.fail(.nonceMismatch) }
        // Step 4: the certificate is the credential key's.
        guard leaf.publicKey == input.credential.publicKey.certificatePublicKey else { throw members.fail(.credentialKeyMismatch) }
        // Apple's anonymous CA certifies the nonce over this authenticator data for Apple's authenticator only.
        return VerifiedAttestation(format: "apple", type: .anonCA, certificates: certificates, trustPath: der, modelBinding: .certificate)
    }
}
