import Foundation

/// The PostgreSQL server the tests that need one share: `.ci/run` starts a throw-away cluster and exports its URL in
/// `MAUTH_TEST_POSTGRES_URL` (CONTRIBUTING.md says how to start one locally). Tests on it use random names, since
/// runs share its database.
public enum TestPostgres {
    /// Why a test that needs PostgreSQL does not run here.
    public static let missingReason = "MAUTH_TEST_POSTGRES_URL is not set; run .ci/run, or start PostgreSQL and export it"

    /// Why a missing URL fails a run under `CI=true`.
    public static let requiredReason = "MAUTH_TEST_POSTGRES_URL is not set under CI=true: .ci/run must start PostgreSQL"

    /// The server's URL, or nil where none is set.
    public static var url: String? {
        guard let url = ProcessInfo.processInfo.environment["MAUTH_TEST_POSTGRES_URL"], !url.isEmpty else { return nil }
        return url
    }

    /// Whether a missing URL is a failure rather than a skip: under `CI=true`, where `.ci/run` provides it, so CI can
    /// never pass by skipping the PostgreSQL half of a test.
    public static var required: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }
}
