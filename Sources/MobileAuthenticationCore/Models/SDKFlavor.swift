/// The SDK's flavor, as the Nevis SDK defines them ("SDK hardening and flavors"): the build configuration the SDK
/// was compiled in decides it, so an app cannot switch it at run time, by accident or otherwise.
///
/// - ``debug``: what Xcode's Run builds (the Debug configuration, and `swift build`). The Apple platform skips
///   debugger detection, so the app runs with LLDB attached, and says so once in the log. Every other guard stays: the
///   device lock, the key protection, the transport's trust.
/// - ``release``: what Archive builds (the Release configuration): every guard, a traced process refused with
///   `DeviceProtectionError`.
public enum SDKFlavor: String, Sendable, CaseIterable {
    case debug
    case release

    /// The flavor of this build of the SDK.
    public static var current: SDKFlavor {
        #if DEBUG
        return .debug
        #else
        return .release
        #endif
    }
}
