/// The version of this project's products, in one place: the SDK reports it as
/// `MetaData.mobileAuthenticationVersion`, and `mauth --version` prints it. Raise it here, and only here, for a
/// release.
public enum ProductVersion {
    public static let major = 0
    public static let minor = 8
    public static let patch = 0

    /// `major.minor.patch`.
    public static var text: String { "\(major).\(minor).\(patch)" }
}
