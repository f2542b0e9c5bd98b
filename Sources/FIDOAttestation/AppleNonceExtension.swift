import SwiftASN1

/// The extension Apple's attestation CAs put in a leaf certificate to certify a nonce (OID 1.2.840.113635.100.8.2):
/// `SEQUENCE { [1] EXPLICIT OCTET STRING }`. What WebAuthn's `apple` attestation format and App Attest share.
public enum AppleNonceExtension {
    /// The extension's OID.
    public static let oid: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]

    /// The nonce the extension's `value` certifies, or nil for any other shape.
    public static func nonce(in value: ArraySlice<UInt8>) -> [UInt8]? {
        guard let root = try? DER.parse(value), root.identifier == .sequence, case .constructed(let children) = root.content else { return nil }
        let nodes = Array(children)
        guard nodes.count == 1, nodes[0].identifier == ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific),
            case .constructed(let inner) = nodes[0].content
        else { return nil }
        let wrapped = Array(inner)
        guard wrapped.count == 1, let octets = try? ASN1OctetString(derEncoded: wrapped[0]) else { return nil }
        return Array(octets.bytes)
    }
}
