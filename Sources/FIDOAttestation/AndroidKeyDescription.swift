import SwiftASN1

/// The Android key attestation extension of a Keystore certificate (OID 1.3.6.1.4.1.11129.2.1.17, the
/// `KeyDescription` of Android's key attestation schema): what the device's secure hardware says about the key the
/// certificate holds. Only the fields full basic attestation checks are read; the rest of the structure is skipped.
///
/// ```
/// KeyDescription ::= SEQUENCE {
///     attestationVersion INTEGER, attestationSecurityLevel SecurityLevel, keyMintVersion INTEGER,
///     keyMintSecurityLevel SecurityLevel, attestationChallenge OCTET STRING, uniqueId OCTET STRING,
///     softwareEnforced AuthorizationList, hardwareEnforced AuthorizationList }
/// SecurityLevel ::= ENUMERATED { Software (0), TrustedEnvironment (1), StrongBox (2) }
/// AuthorizationList ::= SEQUENCE { purpose [1] EXPLICIT SET OF INTEGER OPTIONAL, …, origin [702] EXPLICIT INTEGER OPTIONAL, … }
/// ```
public struct AndroidKeyDescription: Sendable, Equatable {
    /// The extension's OID.
    public static let oid: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 11129, 2, 1, 17]

    public enum SecurityLevel: Int, Sendable { case software = 0, trustedEnvironment = 1, strongBox = 2 }

    public var attestationSecurityLevel: SecurityLevel
    public var attestationChallenge: [UInt8]
    /// The key's purposes the secure hardware enforces (KeyPurpose: 2 is SIGN).
    public var hardwarePurposes: Set<Int>
    /// Where the key came from, as the secure hardware enforces it (KeyOrigin: 0 GENERATED, 2 IMPORTED…); nil when
    /// the hardware list does not say.
    public var hardwareOrigin: Int?
    /// The same two, as the Android system (software) enforces them.
    public var softwarePurposes: Set<Int>
    public var softwareOrigin: Int?
    /// Whether either list holds `allApplications` [600]: a key every app on the device may use, which cannot be
    /// bound to one relying party (WebAuthn §8.4 refuses it).
    public var allApplications: Bool

    public static let purposeSign = 2
    public static let originGenerated = 0

    public init(
        attestationSecurityLevel: SecurityLevel, attestationChallenge: [UInt8], hardwarePurposes: Set<Int>, hardwareOrigin: Int?,
        softwarePurposes: Set<Int> = [], softwareOrigin: Int? = nil, allApplications: Bool = false
    ) {
        self.attestationSecurityLevel = attestationSecurityLevel
        self.attestationChallenge = attestationChallenge
        self.hardwarePurposes = hardwarePurposes
        self.hardwareOrigin = hardwareOrigin
        self.softwarePurposes = softwarePurposes
        self.softwareOrigin = softwareOrigin
        self.allApplications = allApplications
    }

    /// Reads the extension's value (the DER of a `KeyDescription`).
    public init(derEncoded bytes: ArraySlice<UInt8>) throws {
        guard case .constructed(let nodes) = try DER.parse(bytes).content else {
            throw ASN1Error.invalidASN1Object(reason: "KeyDescription is not a SEQUENCE")
        }
        let fields = Array(nodes)
        guard fields.count >= 8 else { throw ASN1Error.invalidASN1Object(reason: "KeyDescription has \(fields.count) fields, not 8") }
        let level = try Int(derEncoded: fields[1], withIdentifier: .enumerated)
        guard let securityLevel = SecurityLevel(rawValue: level) else {
            throw ASN1Error.invalidASN1Object(reason: "unknown attestationSecurityLevel \(level)")
        }
        attestationSecurityLevel = securityLevel
        attestationChallenge = Array(try ASN1OctetString(derEncoded: fields[4]).bytes)
        let software = try Self.authorizationList(fields[6], name: "softwareEnforced")
        let hardware = try Self.authorizationList(fields[7], name: "hardwareEnforced")
        (softwarePurposes, softwareOrigin) = (software.purposes, software.origin)
        (hardwarePurposes, hardwareOrigin) = (hardware.purposes, hardware.origin)
        allApplications = software.allApplications || hardware.allApplications
    }

    /// The members of one AuthorizationList this type reads: purpose [1], allApplications [600], origin [702].
    private static func authorizationList(_ node: ASN1Node, name: String) throws -> (purposes: Set<Int>, origin: Int?, allApplications: Bool) {
        guard case .constructed(let entries) = node.content else {
            throw ASN1Error.invalidASN1Object(reason: "\(name) is not a SEQUENCE")
        }
        var purposes = Set<Int>()
        var origin: Int?
        var allApplications = false
        for entry in entries {
            guard entry.identifier.tagClass == .contextSpecific, case .constructed(let inner) = entry.content,
                let value = inner.first(where: { _ in true })
            else { continue }
            switch entry.identifier.tagNumber {
            case 1:
                guard case .constructed(let members) = value.content else {
                    throw ASN1Error.invalidASN1Object(reason: "purpose is not a SET OF INTEGER")
                }
                for member in members { purposes.insert(try Int(derEncoded: member)) }
            case 600:
                allApplications = true
            case 702:
                origin = try Int(derEncoded: value)
            default:
                continue
            }
        }
        return (purposes, origin, allApplications)
    }

    /// The DER of this description, as a device writes it (for tests and stand-in devices): version 4, the same
    /// security level for KeyMint, an empty unique id; `allApplications`, when set, in the hardware list.
    public func derEncoded() throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { s in
            try s.serialize(4)
            try attestationSecurityLevel.rawValue.serialize(into: &s, withIdentifier: .enumerated)
            try s.serialize(4)
            try attestationSecurityLevel.rawValue.serialize(into: &s, withIdentifier: .enumerated)
            try s.serialize(ASN1OctetString(contentBytes: ArraySlice(attestationChallenge)))
            try s.serialize(ASN1OctetString(contentBytes: []))
            try Self.serializeList(into: &s, purposes: softwarePurposes, origin: softwareOrigin, allApplications: false)
            try Self.serializeList(into: &s, purposes: hardwarePurposes, origin: hardwareOrigin, allApplications: allApplications)
        }
        return serializer.serializedBytes
    }

    private static func serializeList(into s: inout DER.Serializer, purposes: Set<Int>, origin: Int?, allApplications: Bool) throws {
        try s.appendConstructedNode(identifier: .sequence) { list in
            if !purposes.isEmpty {
                try list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific)) { tagged in
                    try tagged.appendConstructedNode(identifier: .set) { set in
                        for purpose in purposes.sorted() { try set.serialize(purpose) }
                    }
                }
            }
            if allApplications {
                list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 600, tagClass: .contextSpecific)) { tagged in
                    tagged.appendPrimitiveNode(identifier: .null) { _ in }
                }
            }
            if let origin {
                try list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 702, tagClass: .contextSpecific)) { tagged in
                    try tagged.serialize(origin)
                }
            }
        }
    }
}
