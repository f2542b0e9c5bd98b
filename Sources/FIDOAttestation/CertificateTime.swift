import Foundation
import SwiftASN1

/// An X.509 `Time` (RFC 5280 §4.1.2.5): a UTCTime or a GeneralizedTime, read as a date in UTC. What UAF's attestation
/// certificates and WebAuthn's revocation lists share.
public enum CertificateTime {
    /// The date `node` holds; throws for a node of another type or a time that is no date.
    public static func date(_ node: ASN1Node) throws -> Date {
        var components = DateComponents()
        components.timeZone = TimeZone(identifier: "UTC")
        if node.identifier == .utcTime {
            let time = try UTCTime(derEncoded: node)
            (components.year, components.month, components.day) = (time.year, time.month, time.day)
            (components.hour, components.minute, components.second) = (time.hours, time.minutes, time.seconds)
        } else {
            let time = try GeneralizedTime(derEncoded: node)
            (components.year, components.month, components.day) = (time.year, time.month, time.day)
            (components.hour, components.minute, components.second) = (time.hours, time.minutes, time.seconds)
        }
        guard let date = Calendar(identifier: .gregorian).date(from: components) else {
            throw ASN1Error.invalidASN1Object(reason: "a time that is no date")
        }
        return date
    }
}
