#if os(Linux)
import Foundation

// The Darwin process query `ApplePlatform.checkIntegrity()` makes (Apple QA1361): `sysctl` with
// `CTL_KERN.KERN_PROC.KERN_PROC_PID` fills a `kinfo_proc`, whose `kp_proc.p_flag` has `P_TRACED` under a debugger.
// glibc no longer declares `sysctl`, so this one answers for the scripted device.

public let CTL_KERN: Int32 = 1
public let KERN_PROC: Int32 = 14
public let KERN_PROC_PID: Int32 = 1
public let P_TRACED: Int32 = 0x0000_0800

public struct extern_proc { public var p_flag: Int32 = 0 }
public struct kinfo_proc {
    public var kp_proc = extern_proc()
    public init() {}
}

public func sysctl(
    _ name: UnsafeMutablePointer<Int32>!, _ namelen: UInt32, _ oldp: UnsafeMutableRawPointer!,
    _ oldlenp: UnsafeMutablePointer<Int>!, _ newp: UnsafeMutableRawPointer!, _ newlen: Int
) -> Int32 {
    guard namelen == 4, name[0] == CTL_KERN, name[1] == KERN_PROC, name[2] == KERN_PROC_PID,
        oldlenp.pointee >= MemoryLayout<kinfo_proc>.stride
    else { return -1 }
    var info = kinfo_proc()
    if ScriptedAppleDevice.current.debuggerAttached { info.kp_proc.p_flag |= P_TRACED }
    oldp.storeBytes(of: info, as: kinfo_proc.self)
    return 0
}
#endif
