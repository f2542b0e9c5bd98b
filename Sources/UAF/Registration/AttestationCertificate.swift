import FIDOAttestation
import Foundation
import SwiftASN1

/// The few fields of an X.509 attestation certificate the verifier needs, read with a minimal DER walk so that
/// certificates signed with algorithms swift-certificates refuses (the spec example uses ecdsa-with-SHA1) can
/// still be used when the metadata lists them verbatim as trust anchors.
struct AttestationCertificate {
    let subjectPublicKeyInfo: [UInt8]
    let notBefore: Date
    let notAfter: Date

    init(der: [UInt8]) throws {
        guard case .constructed(let certificate) = try DER.parse(der[...]).content,
            let tbsNode = certificate.first(where: { _ in true }),
            case .constructed(let tbsChildren) = tbsNode.content
        else {
            throw ASN1Error.invalidASN1Object(reason: "not a certificate")
        }
        var fields = Array(tbsChildren)
        // Skip the optional explicit [0] version.
        if let first = fields.first, first.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            fields.removeFirst()
        }
        // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
        guard fields.count >= 6, case .constructed(let validity) = fields[3].content else {
            throw ASN1Error.invalidASN1Object(reason: "truncated TBSCertificate")
        }
        let times = Array(validity)
        guard times.count == 2 else { throw ASN1Error.invalidASN1Object(reason: "bad validity") }
        notBefore = try CertificateTime.date(times[0])
        notAfter = try CertificateTime.date(times[1])
        subjectPublicKeyInfo = Array(fields[5].encodedBytes)
    }
}
