#if os(Linux)
import Foundation
import Glibc
import SwiftASN1
import X509

// The trust evaluation of Security (`SecTrust`) that `ServerTrust` calls, with Apple's signatures and its documented
// rules: a trust holds the server's chain and its SSL policy (the host); `SecTrustSetAnchorCertificates` replaces
// the system's roots by the given ones until `SecTrustSetAnchorCertificatesOnly(trust, false)` brings them back;
// `SecTrustEvaluateWithError` builds a path from the leaf to a root and checks it (RFC 5280: signatures, validity,
// CA constraints; the SSL policy: the leaf names the host). The path is checked by swift-certificates' `Verifier`, an
// implementation independent of the code under test. The system's roots are `ScriptedAppleDevice.current.systemRoots`.

public typealias CFArray = NSArray

public final class SecCertificate: @unchecked Sendable {
    public let certificate: Certificate
    init(_ certificate: Certificate) { self.certificate = certificate }
}

public final class SecPolicy: @unchecked Sendable {
    let hostname: String?
    init(hostname: String?) { self.hostname = hostname }
}

public final class SecTrust: @unchecked Sendable {
    let chain: [SecCertificate]
    let policies: [SecPolicy]
    var anchors: [SecCertificate] = []
    var anchorsOnly = false
    init(chain: [SecCertificate], policies: [SecPolicy]) {
        self.chain = chain
        self.policies = policies
    }
}

public let errSecParam: OSStatus = -50
public let errSecNotTrusted: OSStatus = -67843

public func SecCertificateCreateWithData(_ allocator: CFAllocator?, _ data: CFData) -> SecCertificate? {
    guard let certificate = try? Certificate(derEncoded: Array(data as Data)) else { return nil }
    return SecCertificate(certificate)
}

public func SecPolicyCreateSSL(_ server: Bool, _ hostname: CFString?) -> SecPolicy {
    SecPolicy(hostname: hostname.map { $0 as String })
}

public func SecTrustCreateWithCertificates(
    _ certificates: CFTypeRef, _ policies: CFTypeRef?, _ trust: UnsafeMutablePointer<SecTrust?>
) -> OSStatus {
    let chain = (certificates as? SecCertificate).map { [$0] } ?? ((certificates as? NSArray)?.compactMap { $0 as? SecCertificate } ?? [])
    let rules = (policies as? SecPolicy).map { [$0] } ?? ((policies as? NSArray)?.compactMap { $0 as? SecPolicy } ?? [])
    guard !chain.isEmpty else { return errSecParam }
    trust.pointee = SecTrust(chain: chain, policies: rules)
    return errSecSuccess
}

public func SecTrustSetAnchorCertificates(_ trust: SecTrust, _ anchorCertificates: CFArray) -> OSStatus {
    let anchors = anchorCertificates.compactMap { $0 as? SecCertificate }
    guard anchors.count == anchorCertificates.count else { return errSecParam }
    trust.anchors = anchors
    // Apple: calling this function alone disables trusting any anchors other than these.
    trust.anchorsOnly = true
    return errSecSuccess
}

public func SecTrustSetAnchorCertificatesOnly(_ trust: SecTrust, _ anchorCertificatesOnly: Bool) -> OSStatus {
    trust.anchorsOnly = anchorCertificatesOnly
    return errSecSuccess
}

public func SecTrustEvaluateWithError(_ trust: SecTrust, _ error: UnsafeMutablePointer<CFError?>?) -> Bool {
    let roots = trust.anchors.map(\.certificate) + (trust.anchorsOnly ? [] : ScriptedAppleDevice.current.systemRoots)
    let host = trust.policies.compactMap(\.hostname).first
    let isAddress = host.map(isIPAddress) ?? false
    let leaf = trust.chain[0].certificate
    let intermediates = CertificateStore(trust.chain.dropFirst().map(\.certificate))
    let outcome = Blocking.run {
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy()
            ServerIdentityPolicy(serverHostname: isAddress ? nil : host, serverIP: isAddress ? host : nil)
        }
        return await verifier.validate(leaf: leaf, intermediates: intermediates)
    }
    if case .validCertificate = outcome { return true }
    error?.pointee = NSError(
        domain: NSOSStatusErrorDomain, code: Int(errSecNotTrusted),
        userInfo: [NSLocalizedDescriptionKey: "“\(host ?? "the server")” certificate is not trusted"])
    return false
}

func isIPAddress(_ host: String) -> Bool {
    var v4 = in_addr()
    var v6 = in6_addr()
    return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
}

/// Waits on the calling thread for `work` (SecTrust's evaluation is synchronous, swift-certificates' is async). Call
/// it off Swift's cooperative pool (a synchronous test), as Apple asks of `SecTrustEvaluateWithError` too.
enum Blocking {
    private final class Box<T>: @unchecked Sendable { var value: T? }

    static func run<T: Sendable>(_ work: @escaping @Sendable () async -> T) -> T {
        let box = Box<T>()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            box.value = await work()
            done.signal()
        }
        done.wait()
        return box.value!
    }
}
#endif
