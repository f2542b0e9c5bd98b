/// The attestation block of a registration assertion.
public enum Attestation: Sendable, Equatable {
    /// TAG_ATTESTATION_BASIC_FULL: signature by the attestation key; certificates leaf first.
    case basicFull(signature: [UInt8], certificates: [[UInt8]])
    /// TAG_ATTESTATION_BASIC_SURROGATE: signature by the new UAuth key itself.
    case basicSurrogate(signature: [UInt8])
    /// TAG_ATTESTATION_ECDAA: an ECDAA signature (uaf-spec §2.2). Parsed so that it is refused as an attestation
    /// (1496) rather than as malformed content: no relying party in this package verifies ECDAA.
    case ecdaa(signature: [UInt8])

    public var type: AttestationType {
        switch self {
        case .basicFull: return .basicFull
        case .basicSurrogate: return .basicSurrogate
        case .ecdaa: return .ecdaa
        }
    }

    public var signature: [UInt8] {
        switch self {
        case .basicFull(let s, _), .basicSurrogate(let s), .ecdaa(let s): return s
        }
    }

    /// The certificates a full attestation carries, leaf first; empty for the other types.
    public var certificates: [[UInt8]] {
        if case .basicFull(_, let certificates) = self { return certificates }
        return []
    }
}

/// TAG_UAFV1_REG_ASSERTION (uaf-spec §2.3).
public struct RegistrationAssertion: Sendable, Equatable {
    public var keyRegistrationData: KeyRegistrationData
    /// The exact KRD bytes received (header included): the signed data. Never re-encoded.
    public var signedBytes: [UInt8]
    public var attestation: Attestation
    /// Unsigned extensions (inside the assertion, outside the KRD).
    public var unsignedExtensions: [AssertionExtension]

    /// Parses a registration assertion. Any malformation is a ``TLVError``.
    public init(bytes: [UInt8]) throws(TLVError) {
        let outer = try TLVDecoder.decodeSingle(bytes, expected: .regAssertion)
        let fields = try TLVFields(
            outer, known: [.krd, .attestationBasicFull, .attestationBasicSurrogate, .attestationECDAA],
            repeatable: AssertionExtension.tags)
        let krd = try fields.required(.krd)
        keyRegistrationData = try KeyRegistrationData(element: krd)
        signedBytes = Array(krd.encoded)
        // Exactly one attestation block.
        let blocks = [TLVTag.attestationBasicFull, .attestationBasicSurrogate, .attestationECDAA].compactMap { tag in
            fields.optional(tag).map { (tag, $0) }
        }
        guard let (tag, block) = blocks.first else { throw TLVError.missingTag(.attestationBasicSurrogate) }
        guard blocks.count == 1 else { throw TLVError.duplicateTag(blocks[1].0) }
        switch tag {
        case .attestationBasicFull:
            let inner = try TLVFields(block, known: [.signature], repeatable: [.attestationCert])
            let certificates = (inner.repeated[.attestationCert] ?? []).map { Array($0.value) }
            guard !certificates.isEmpty else { throw TLVError.missingTag(.attestationCert) }
            attestation = .basicFull(signature: try inner.bytes(.signature, length: 1...1024), certificates: certificates)
        case .attestationBasicSurrogate:
            let inner = try TLVFields(block, known: [.signature])
            attestation = .basicSurrogate(signature: try inner.bytes(.signature, length: 1...1024))
        default:
            let inner = try TLVFields(block, known: [.signature])
            attestation = .ecdaa(signature: try inner.bytes(.signature, length: 1...1024))
        }
        unsignedExtensions = try AssertionExtension.parse(fields)
    }

    /// Assembles an assertion from already-encoded KRD bytes and an attestation, in canonical order.
    public static func encode(signedKRD: [UInt8], attestation: Attestation, unsignedExtensions: [AssertionExtension] = []) throws(TLVError) -> [UInt8]
    {
        var e = TLVEncoder()
        try e.composite(.regAssertion) { (a: inout TLVEncoder) throws(TLVError) in
            a.raw(signedKRD)
            switch attestation {
            case .basicFull(let signature, let certificates):
                try a.composite(.attestationBasicFull) { (b: inout TLVEncoder) throws(TLVError) in
                    try b.leaf(.signature, signature)
                    for certificate in certificates { try b.leaf(.attestationCert, certificate) }
                }
            case .basicSurrogate(let signature):
                try a.composite(.attestationBasicSurrogate) { (b: inout TLVEncoder) throws(TLVError) in try b.leaf(.signature, signature) }
            case .ecdaa(let signature):
                try a.composite(.attestationECDAA) { (b: inout TLVEncoder) throws(TLVError) in try b.leaf(.signature, signature) }
            }
            for ext in unsignedExtensions { try ext.encode(into: &a) }
        }
        return e.bytes
    }
}
