import Foundation

/// base64url (RFC 4648 §5) as UAF uses it: encoded without `=` padding; decoding tolerates padding
/// (uaf-spec §1, "All binary values in JSON are base64url").
public enum Base64URL {
    public static func encode<D: DataProtocol>(_ data: D) -> String {
        Data(data).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Decodes base64url; returns nil for any character outside the alphabet (including the standard `+`/`/`)
    /// or an impossible length.
    public static func decode(_ string: String) -> Data? {
        var s = string
        while s.hasSuffix("=") { s.removeLast() }
        guard s.utf8.allSatisfy({ byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x5F
        }) else { return nil }
        guard s.utf8.count % 4 != 1 else { return nil }
        s = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        s += String(repeating: "=", count: (4 - s.utf8.count % 4) % 4)
        return Data(base64Encoded: s)
    }
}
