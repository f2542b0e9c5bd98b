import CBOR

/// `compound` (WebAuthn §8.9): two or more statements of other formats over the same registration. Every one must
/// verify (our choice where the specification leaves it to the relying party: a statement that fails is a statement
/// someone forged or broke, and accepting the rest would hide it).
enum CompoundAttestation {
    static func verify(_ input: AttestationInput) throws(AttestationStatementError) -> VerifiedAttestation {
        guard let entries = input.statement.array else { throw AttestationStatementError("compound", .memberMissing("attStmt (an array)")) }
        guard entries.count >= 2 else {
            throw AttestationStatementError("compound", .compound("it holds \(entries.count) statement(s), at least 2 needed"))
        }
        // One statement per format is all a real authenticator could send; the bound caps the work of one registration.
        guard entries.count <= AttestationFormats.supported.count - 1 else {
            throw AttestationStatementError(
                "compound", .compound("it holds \(entries.count) statements, \(AttestationFormats.supported.count - 1) at most"))
        }
        var components: [VerifiedAttestation] = []
        for (index, entry) in entries.enumerated() {
            guard let map = entry.map, let format = map[text: "fmt"]?.text, let statement = map[text: "attStmt"], map.entries.count == 2 else {
                throw AttestationStatementError("compound", .compound("statement \(index) is not a map of fmt and attStmt"))
            }
            guard format != "compound" else { throw AttestationStatementError("compound", .compound("statement \(index) is itself compound")) }
            guard AttestationFormats.supported.contains(format) else {
                throw AttestationStatementError("compound", .compoundEntry(index: index, format: format, reason: "an unsupported format"))
            }
            let nested = AttestationInput(
                statement: statement, authenticatorData: input.authenticatorData, credential: input.credential,
                clientDataHash: input.clientDataHash, now: input.now)
            do { components.append(try AttestationFormats.verify(format: format, nested)) } catch {
                throw AttestationStatementError("compound", .compoundEntry(index: index, format: format, reason: "\(error.reason)"))
            }
        }
        // The compound's own type and trust path are those of its first statement that has a certificate chain
        // (else its first): that is the chain step 24 judges; every component stays listed.
        let lead = components.first { !$0.certificates.isEmpty } ?? components[0]
        return VerifiedAttestation(
            format: "compound", type: lead.type, certificates: lead.certificates, trustPath: lead.trustPath, components: components,
            modelBinding: .strongest(components.map(\.modelBinding)))
    }
}
