import UAF

/// A rejection with its UAF status code. `detail` goes to the log; the client sees the status code's generic text.
package struct ServiceFailure: Error {
    package let status: UAFStatusCode
    package let detail: String
    package init(_ status: UAFStatusCode, _ detail: String) { self.status = status; self.detail = detail }
}
