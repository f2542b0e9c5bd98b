#if os(Linux)
import Crypto
import Foundation

// The subset of Security and CoreFoundation that `ApplePlatform` and `KeychainKeyProtector` call, with Apple's
// names, status values and signatures. CoreFoundation types are their toll-free bridged Foundation classes, so
// `as CFDictionary`, `as String` and `as? Data` compile as they do on Apple platforms. The keychain and the Secure
// Enclave behind them are `ScriptedAppleDevice`'s.

public typealias OSStatus = Int32
public typealias CFTypeRef = AnyObject
public typealias CFTypeID = UInt
public typealias CFString = NSString
public typealias CFDictionary = NSDictionary
public typealias CFData = NSData
public typealias CFError = NSError
public final class CFAllocator: Sendable {}
public let kCFAllocatorDefault: CFAllocator? = nil

public let errSecSuccess: OSStatus = 0
public let errSecUserCanceled: OSStatus = -128
public let errSecAuthFailed: OSStatus = -25293
public let errSecDuplicateItem: OSStatus = -25299
public let errSecItemNotFound: OSStatus = -25300
public let errSecInteractionNotAllowed: OSStatus = -25308

nonisolated(unsafe) public let kSecClass: CFString = "class"
nonisolated(unsafe) public let kSecClassKey: CFString = "keys"
nonisolated(unsafe) public let kSecClassGenericPassword: CFString = "genp"
nonisolated(unsafe) public let kSecAttrService: CFString = "svce"
nonisolated(unsafe) public let kSecAttrAccount: CFString = "acct"
nonisolated(unsafe) public let kSecAttrAccessible: CFString = "pdmn"
nonisolated(unsafe) public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"
nonisolated(unsafe) public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
nonisolated(unsafe) public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
nonisolated(unsafe) public let kSecAttrAccessControl: CFString = "accc"
nonisolated(unsafe) public let kSecAttrKeyType: CFString = "type"
nonisolated(unsafe) public let kSecAttrKeyTypeECSECPrimeRandom: CFString = "73"
nonisolated(unsafe) public let kSecAttrKeySizeInBits: CFString = "bsiz"
nonisolated(unsafe) public let kSecAttrTokenID: CFString = "tkid"
nonisolated(unsafe) public let kSecAttrTokenIDSecureEnclave: CFString = "com.apple.setoken"
nonisolated(unsafe) public let kSecAttrIsPermanent: CFString = "perm"
nonisolated(unsafe) public let kSecAttrApplicationTag: CFString = "atag"
nonisolated(unsafe) public let kSecPrivateKeyAttrs: CFString = "private"
nonisolated(unsafe) public let kSecReturnRef: CFString = "r_Ref"
nonisolated(unsafe) public let kSecReturnData: CFString = "r_Data"
nonisolated(unsafe) public let kSecValueData: CFString = "v_Data"
nonisolated(unsafe) public let kSecUseAuthenticationContext: CFString = "u_AuthCtx"
nonisolated(unsafe) public let kSecUseDataProtectionKeychain: CFString = "nleg"

public struct SecAccessControlCreateFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let userPresence = Self(rawValue: 1 << 0)
    public static let biometryAny = Self(rawValue: 1 << 1)
    public static let biometryCurrentSet = Self(rawValue: 1 << 3)
    public static let devicePasscode = Self(rawValue: 1 << 4)
    public static let or = Self(rawValue: 1 << 14)
    public static let and = Self(rawValue: 1 << 15)
    public static let privateKeyUsage = Self(rawValue: 1 << 30)
    public static let applicationPassword = Self(rawValue: 1 << 31)
}

public final class SecAccessControl: @unchecked Sendable {
    public let protection: String
    public let flags: SecAccessControlCreateFlags
    init(protection: String, flags: SecAccessControlCreateFlags) {
        self.protection = protection
        self.flags = flags
    }
}

public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? {
    guard let protection = protection as? String else {
        error?.pointee = Unmanaged.passRetained(NSError(domain: NSOSStatusErrorDomain, code: -50))
        return nil
    }
    return SecAccessControl(protection: protection, flags: flags)
}

public struct SecKeyAlgorithm: RawRepresentable, @unchecked Sendable {
    public let rawValue: CFString
    public init(rawValue: CFString) { self.rawValue = rawValue }
    public static let ecdsaSignatureMessageX962SHA256 = SecKeyAlgorithm(rawValue: "algid:sign:ECDSA:message-X962:SHA256")
}

/// A key reference: a Secure Enclave private key (by its tag) or the public half of one.
public final class SecKey: @unchecked Sendable {
    let tag: String
    let isPublic: Bool
    let context: LAContext?
    init(tag: String, isPublic: Bool, context: LAContext?) {
        self.tag = tag
        self.isPublic = isPublic
        self.context = context
    }
}

public func SecKeyGetTypeID() -> CFTypeID { 0x5EC }
public func CFGetTypeID(_ cf: CFTypeRef?) -> CFTypeID { cf is SecKey ? SecKeyGetTypeID() : 1 }

public func SecKeyCreateRandomKey(_ parameters: CFDictionary, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> SecKey? {
    let attributes = parameters as? [String: Any] ?? [:]
    let privateAttributes = attributes[kSecPrivateKeyAttrs as String] as? [String: Any] ?? [:]
    guard attributes[kSecAttrTokenID as String] as? String == kSecAttrTokenIDSecureEnclave as String,
        attributes[kSecAttrKeyType as String] as? String == kSecAttrKeyTypeECSECPrimeRandom as String,
        let tag = privateAttributes[kSecAttrApplicationTag as String] as? Data,
        let control = privateAttributes[kSecAttrAccessControl as String] as? SecAccessControl
    else {
        error?.pointee = Unmanaged.passRetained(NSError(domain: NSOSStatusErrorDomain, code: -50))
        return nil
    }
    switch ScriptedAppleDevice.current.createEnclaveKey(tag: String(decoding: tag, as: UTF8.self), control: control) {
    case .success(let key): return key
    case .failure(let refusal):
        error?.pointee = Unmanaged.passRetained(refusal)
        return nil
    }
}

public func SecKeyCopyPublicKey(_ key: SecKey) -> SecKey? { SecKey(tag: key.tag, isPublic: true, context: nil) }

public func SecKeyCopyExternalRepresentation(_ key: SecKey, _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?) -> CFData? {
    guard key.isPublic, let publicKey = ScriptedAppleDevice.current.enclavePublicKey(tag: key.tag) else {
        error?.pointee = Unmanaged.passRetained(NSError(domain: NSOSStatusErrorDomain, code: Int(errSecItemNotFound)))
        return nil
    }
    return publicKey.x963Representation as CFData
}

public func SecKeyCreateSignature(
    _ key: SecKey, _ algorithm: SecKeyAlgorithm, _ dataToSign: CFData,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> CFData? {
    switch ScriptedAppleDevice.current.sign(key, message: dataToSign as Data) {
    case .success(let signature): return signature as CFData
    case .failure(let refusal):
        error?.pointee = Unmanaged.passRetained(refusal)
        return nil
    }
}

public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    ScriptedAppleDevice.current.copyMatching(query as? [String: Any] ?? [:], result: result)
}

@discardableResult
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    ScriptedAppleDevice.current.add(attributes as? [String: Any] ?? [:])
}

@discardableResult
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    ScriptedAppleDevice.current.delete(query as? [String: Any] ?? [:])
}
#endif
