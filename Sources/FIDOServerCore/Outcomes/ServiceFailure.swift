import UAF

/// A rejection with its UAF status code. `detail` goes to the log; the client sees the status code's generic text.
/// `username` is the user the rejected operation was for, when the server knows it (a request it issued names her):
/// the audit trail files the refusal under her, so an operator looking at her history sees her refused logins too.
package struct ServiceFailure: Error {
    package let status: UAFStatusCode
    package let detail: String
    package let username: String?
    package init(_ status: UAFStatusCode, _ detail: String, username: String? = nil) {
        self.status = status
        self.detail = detail
        self.username = username
    }

    /// A UAF rejection, answered with its status code and its words.
    package init(_ rejection: UAFVerificationError, username: String? = nil) {
        self.init(rejection.statusCode, rejection.description, username: username)
    }
}
