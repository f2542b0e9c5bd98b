import Foundation

/// The per-user cap on unanswered ceremonies, UAF requests and passkey ceremonies alike
/// (`limits.outstandingRequestsPerUsername`): `username` may have fewer than `limit` counted ceremonies unexpired at
/// `now`. A ceremony stored under a cap counts against it; one stored without counts against nobody.
package struct CeremonyCap: Sendable {
    var username: String
    var limit: Int
    var now: Date
}
