import Foundation

/// Text rules shared by the SDK and the server.
public enum Text {
    /// Names shown to people and written to logs (usernames, device names, device ids) carry no control characters.
    public static func hasControlCharacters(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// RFC 3986's unreserved characters: what stays as it is in a path segment or a form value.
    private static let unreserved: CharacterSet = {
        var set = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        set.insert(charactersIn: "-._~")
        return set
    }()

    /// `text` with everything but unreserved characters percent-encoded: safe as one URL path segment (it cannot
    /// add segments) and as an `application/x-www-form-urlencoded` value.
    public static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}
