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
public struct AndroidKeyDescription: Sendable, Hashable {
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

    /// The app the key was made for (`attestationApplicationId` [709], written by the Android system into the
    /// software list): its package names and the SHA-256 digests of its signing certificates. nil when absent or not
    /// of the documented shape.
    public var applicationID: ApplicationID?
    /// What the secure hardware saw of the boot (`rootOfTrust` [704] of the hardware list); nil when absent or not of
    /// the documented shape.
    public var rootOfTrust: RootOfTrust?

    public static let purposeSign = 2
    public static let originGenerated = 0

    /// `AttestationApplicationId ::= SEQUENCE { package_infos SET OF SEQUENCE { package_name OCTET STRING, version
    /// INTEGER }, signature_digests SET OF OCTET STRING }`.
    public struct ApplicationID: Sendable, Hashable {
        public struct Package: Sendable, Hashable {
            public var name: String
            public var version: Int
            public init(name: String, version: Int) {
                self.name = name
                self.version = version
            }
        }
        public var packages: [Package]
        /// SHA-256 of each signing certificate of the app.
        public var signatureDigests: [[UInt8]]
        public init(packages: [Package], signatureDigests: [[UInt8]]) {
            self.packages = packages
            self.signatureDigests = signatureDigests
        }
    }

    /// `RootOfTrust ::= SEQUENCE { verifiedBootKey OCTET STRING, deviceLocked BOOLEAN, verifiedBootState ENUMERATED
    /// { Verified (0), SelfSigned (1), Unverified (2), Failed (3) }, verifiedBootHash OCTET STRING }` (the hash from
    /// version 3 on).
    public struct RootOfTrust: Sendable, Hashable {
        public enum VerifiedBootState: Int, Sendable { case verified = 0, selfSigned = 1, unverified = 2, failed = 3 }
        public var verifiedBootKey: [UInt8]
        public var deviceLocked: Bool
        public var verifiedBootState: VerifiedBootState
        public init(verifiedBootKey: [UInt8], deviceLocked: Bool, verifiedBootState: VerifiedBootState) {
            self.verifiedBootKey = verifiedBootKey
            self.deviceLocked = deviceLocked
            self.verifiedBootState = verifiedBootState
        }
    }

    public init(
        attestationSecurityLevel: SecurityLevel, attestationChallenge: [UInt8], hardwarePurposes: Set<Int>, hardwareOrigin: Int?,
        softwarePurposes: Set<Int> = [], softwareOrigin: Int? = nil, allApplications: Bool = false, applicationID: ApplicationID? = nil,
        rootOfTrust: RootOfTrust? = nil
    ) {
        self.attestationSecurityLevel = attestationSecurityLevel
        self.attestationChallenge = attestationChallenge
        self.hardwarePurposes = hardwarePurposes
        self.hardwareOrigin = hardwareOrigin
        self.softwarePurposes = softwarePurposes
        self.softwareOrigin = softwareOrigin
        self.allApplications = allApplications
        self.applicationID = applicationID
        self.rootOfTrust = rootOfTrust
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
        // The Android system writes the app's identity (software list); only the secure hardware sees the boot.
        applicationID = software.applicationID
        rootOfTrust = hardware.rootOfTrust
    }

    private struct AuthorizationList {
        var purposes = Set<Int>()
        var origin: Int?
        var allApplications = false
        var applicationID: ApplicationID?
        var rootOfTrust: RootOfTrust?
    }

    /// The members of one AuthorizationList this type reads: purpose [1], allApplications [600], origin [702],
    /// rootOfTrust [704], attestationApplicationId [709]. The last two are read leniently (nil when not of their
    /// documented shape): a relying party that needs them refuses their absence itself.
    private static func authorizationList(_ node: ASN1Node, name: String) throws -> AuthorizationList {
        guard case .constructed(let entries) = node.content else {
            throw ASN1Error.invalidASN1Object(reason: "\(name) is not a SEQUENCE")
        }
        var list = AuthorizationList()
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
            case 704:
                list.rootOfTrust = try? Self.rootOfTrust(value)
            case 709:
                list.applicationID = try? Self.applicationID(value)
            default:
                continue
            }
        }
        (list.purposes, list.origin, list.allApplications) = (purposes, origin, allApplications)
        return list
    }

    private static func rootOfTrust(_ node: ASN1Node) throws -> RootOfTrust {
        guard case .constructed(let members) = node.content else { throw ASN1Error.invalidASN1Object(reason: "rootOfTrust is not a SEQUENCE") }
        let fields = Array(members)
        guard fields.count >= 3 else { throw ASN1Error.invalidASN1Object(reason: "rootOfTrust has fewer than 3 fields") }
        let state = try Int(derEncoded: fields[2], withIdentifier: .enumerated)
        guard let verifiedBootState = RootOfTrust.VerifiedBootState(rawValue: state) else {
            throw ASN1Error.invalidASN1Object(reason: "unknown verifiedBootState \(state)")
        }
        return RootOfTrust(
            verifiedBootKey: Array(try ASN1OctetString(derEncoded: fields[0]).bytes), deviceLocked: try Bool(derEncoded: fields[1]),
            verifiedBootState: verifiedBootState)
    }

    /// The OCTET STRING holding the DER of an `AttestationApplicationId`.
    private static func applicationID(_ node: ASN1Node) throws -> ApplicationID {
        let wrapped = try ASN1OctetString(derEncoded: node)
        guard case .constructed(let members) = try DER.parse(wrapped.bytes).content else {
            throw ASN1Error.invalidASN1Object(reason: "attestationApplicationId is not a SEQUENCE")
        }
        let fields = Array(members)
        guard fields.count == 2, case .constructed(let infos) = fields[0].content, case .constructed(let digests) = fields[1].content else {
            throw ASN1Error.invalidASN1Object(reason: "attestationApplicationId is not SEQUENCE { SET, SET }")
        }
        var packages: [ApplicationID.Package] = []
        for info in infos {
            guard case .constructed(let parts) = info.content else { throw ASN1Error.invalidASN1Object(reason: "a package info is not a SEQUENCE") }
            let items = Array(parts)
            guard items.count == 2 else { throw ASN1Error.invalidASN1Object(reason: "a package info has \(items.count) fields") }
            let name = try ASN1OctetString(derEncoded: items[0])
            let text = String(decoding: name.bytes, as: UTF8.self)
            // Decoding repairs invalid UTF-8; a name that does not survive the round trip was not text.
            guard Array(text.utf8) == Array(name.bytes) else { throw ASN1Error.invalidASN1Object(reason: "a package name is not UTF-8") }
            packages.append(ApplicationID.Package(name: text, version: try Int(derEncoded: items[1])))
        }
        return ApplicationID(packages: packages, signatureDigests: try digests.map { Array(try ASN1OctetString(derEncoded: $0).bytes) })
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
            try Self.serializeList(into: &s, purposes: softwarePurposes, origin: softwareOrigin, allApplications: false, applicationID: applicationID)
            try Self.serializeList(
                into: &s, purposes: hardwarePurposes, origin: hardwareOrigin, allApplications: allApplications, rootOfTrust: rootOfTrust)
        }
        return serializer.serializedBytes
    }

    private static func serializeList(
        into s: inout DER.Serializer, purposes: Set<Int>, origin: Int?, allApplications: Bool, applicationID: ApplicationID? = nil,
        rootOfTrust: RootOfTrust? = nil
    ) throws {
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
            if let rootOfTrust {
                try list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 704, tagClass: .contextSpecific)) { tagged in
                    try tagged.appendConstructedNode(identifier: .sequence) { root in
                        try root.serialize(ASN1OctetString(contentBytes: ArraySlice(rootOfTrust.verifiedBootKey)))
                        try root.serialize(rootOfTrust.deviceLocked)
                        try rootOfTrust.verifiedBootState.rawValue.serialize(into: &root, withIdentifier: .enumerated)
                        try root.serialize(ASN1OctetString(contentBytes: ArraySlice([UInt8](repeating: 0, count: 32))))
                    }
                }
            }
            if let applicationID {
                var inner = DER.Serializer()
                try inner.appendConstructedNode(identifier: .sequence) { id in
                    try id.appendConstructedNode(identifier: .set) { infos in
                        for package in applicationID.packages {
                            try infos.appendConstructedNode(identifier: .sequence) { info in
                                try info.serialize(ASN1OctetString(contentBytes: ArraySlice(Array(package.name.utf8))))
                                try info.serialize(package.version)
                            }
                        }
                    }
                    try id.appendConstructedNode(identifier: .set) { digests in
                        for digest in applicationID.signatureDigests { try digests.serialize(ASN1OctetString(contentBytes: ArraySlice(digest))) }
                    }
                }
                try list.appendConstructedNode(identifier: ASN1Identifier(tagWithNumber: 709, tagClass: .contextSpecific)) { tagged in
                    try tagged.serialize(ASN1OctetString(contentBytes: ArraySlice(inner.serializedBytes)))
                }
            }
        }
    }
}
