/// Protocol version (uaf-spec §1.1).
public struct Version: Codable, Hashable, Sendable, CustomStringConvertible {
    public var major: UInt16
    public var minor: UInt16
    public init(major: UInt16, minor: UInt16) {
        self.major = major
        self.minor = minor
    }
    /// UAF 1.0.
    public static let uaf10 = Version(major: 1, minor: 0)
    /// UAF 1.1: what this implementation speaks.
    public static let uaf11 = Version(major: 1, minor: 1)
    /// UAF 1.2, whose messages and assertions are those of 1.1 for everything this implementation uses.
    public static let uaf12 = Version(major: 1, minor: 2)
    public var description: String { "\(major).\(minor)" }

    /// `"1.1"` and the like; nil for any other text.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let major = UInt16(parts[0]), let minor = UInt16(parts[1]), parts.allSatisfy({ $0.allSatisfy(\.isNumber) }) else {
            return nil
        }
        self.init(major: major, minor: minor)
    }
}

/// UAF operations.
public enum UAFOperation: String, Codable, Sendable {
    case registration = "Reg"
    case authentication = "Auth"
    case deregistration = "Dereg"
}

/// A protocol-level extension (uaf-spec §1.1).
public struct Extension: Codable, Hashable, Sendable {
    public var id: String
    public var data: String
    public var failIfUnknown: Bool

    public init(id: String, data: String, failIfUnknown: Bool) {
        self.id = id
        self.data = data
        self.failIfUnknown = failIfUnknown
    }

    enum CodingKeys: String, CodingKey { case id, data, failIfUnknown = "fail_if_unknown" }
}

/// OperationHeader (uaf-spec §1.1).
public struct OperationHeader: Codable, Hashable, Sendable {
    public var upv: Version
    public var op: UAFOperation
    public var appID: String?
    public var serverData: String?
    public var exts: [Extension]?

    public init(upv: Version = .uaf11, op: UAFOperation, appID: String? = nil, serverData: String? = nil, exts: [Extension]? = nil) {
        self.upv = upv
        self.op = op
        self.appID = appID
        self.serverData = serverData
        self.exts = exts
    }

    /// Length limits of uaf-spec §1.1.
    public static let maximumAppIDLength = 512
    public static let maximumServerDataLength = 1536
}
