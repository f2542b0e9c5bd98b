import FIDOAttestation
import X509

/// `android-key` (WebAuthn §8.4): the Android Keystore certifies the credential key, and its key description binds
/// it to this registration.
enum AndroidKeyAttestation {
    static func verify(_ input: AttestationInput) throws(AttestationStatementError) -> VerifiedAttestation {
        let members = try StatementMembers("android-key", input.statement)
        try members.only(["alg", "sig", "x5c"])
        let alg = try members.int("alg")
        let sig = try members.bytes("sig")
        let (certificates, der) = try members.certificates()
        let leaf = certificates[0]
        // Step 1: the credential certificate's key signed authData ‖ clientDataHash.
        guard try members.signingKey(leaf, algorithm: alg).isValidSignature(sig, for: input.signedData) else { throw members.fail(.signatureInvalid) }
        // Step 2: that key is the credential key.
        guard leaf.publicKey == input.credential.publicKey.certificatePublicKey else { throw members.fail(.credentialKeyMismatch) }
        // Step 3: the key description's challenge is this registration's client data hash.
        guard let value = leaf.extensions[oid: AndroidKeyDescription.oid]?.value else {
            throw members.fail(.keyDescription("is missing (extension 1.3.6.1.4.1.11129.2.1.17)"))
        }
        let description: AndroidKeyDescription
        do { description = try AndroidKeyDescription(derEncoded: value) } catch { throw members.fail(.keyDescription("is not a KeyDescription")) }
        guard description.attestationChallenge == input.clientDataHash else { throw members.fail(.nonceMismatch) }
        // Step 4: a key every app may use cannot be scoped to one relying party.
        guard !description.allApplications else { throw members.fail(.keyDescription("allows all applications")) }
        // Step 5, read from both lists (the relying party here does not demand a TEE-only policy): generated in the
        // device (every list that names an origin says so), for signing.
        let origins = [description.hardwareOrigin, description.softwareOrigin].compactMap { $0 }
        guard !origins.isEmpty, origins.allSatisfy({ $0 == AndroidKeyDescription.originGenerated }) else {
            throw members.fail(.keyDescription("does not say the key was generated in the device"))
        }
        guard description.hardwarePurposes.union(description.softwarePurposes).contains(AndroidKeyDescription.purposeSign) else {
            throw members.fail(.keyDescription("does not give the key the SIGN purpose"))
        }
        return VerifiedAttestation(format: "android-key", type: .basic, certificates: certificates, trustPath: der)
    }
}
