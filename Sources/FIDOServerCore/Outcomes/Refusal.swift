/// A refusal of a JSON (non-UAF) endpoint, decided by a service: what kind of refusal, the machine-readable
/// `error` and a `message` safe to show the caller (nothing internal goes into it). The HTTP layer answers it with the
/// status its kind stands for and the `{"error", "message"}` body (`Routes/RefusalAnswer.swift`); services know no
/// HTTP.
package struct Refusal: Error, Sendable {
    package enum Kind: Sendable {
        case badRequest, unauthorized, notFound, notAcceptable, conflict, contentTooLarge, unsupportedMediaType, unprocessableContent
        case tooManyRequests, serviceUnavailable
    }

    package let kind: Kind
    package let error: String
    package let message: String
    /// When the caller may try again, in seconds (an HTTP `Retry-After`).
    package let retryAfterSeconds: Int?

    package init(_ kind: Kind, _ error: String, _ message: String, retryAfterSeconds: Int? = nil) {
        self.kind = kind
        self.error = error
        self.message = message
        self.retryAfterSeconds = retryAfterSeconds
    }
}
