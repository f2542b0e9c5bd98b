import NIOConcurrencyHelpers

/// The appID and the server's own base URL, fixed once the listening port is known (before the first request can
/// arrive).
package final class AppIdentity: Sendable {
    package init() {}
    private let value = NIOLockedValueBox((appID: "", baseURL: ""))
    package var appID: String { value.withLockedValue { $0.appID } }
    /// `https://host:port`, what out-of-band payloads point at unless configured otherwise.
    var baseURL: String { value.withLockedValue { $0.baseURL } }
    package func set(_ appID: String, baseURL: String) { value.withLockedValue { $0 = (appID, baseURL) } }
}
