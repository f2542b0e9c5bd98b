/// A refusal of a JSON (non-UAF) endpoint, decided by a service: what kind of refusal, the machine-readable
/// `error` and a `message` safe to show the caller (nothing internal goes into it). The HTTP layer answers it with the
/// status its kind stands for and the `{"error", "message"}` body (`Routes/RefusalAnswer.swift`); services know no
/// HTTP.
struct Refusal: Error, Sendable {
    enum Kind: Sendable {
        case badRequest, unauthorized, notFound, conflict, contentTooLarge, unsupportedMediaType, unprocessableContent
        case tooManyRequests, serviceUnavailable
    }

    let kind: Kind
    let error: String
    let message: String
    /// When the caller may try again, in seconds (an HTTP `Retry-After`).
    let retryAfterSeconds: Int?

    init(_ kind: Kind, _ error: String, _ message: String, retryAfterSeconds: Int? = nil) {
        self.kind = kind; self.error = error; self.message = message; self.retryAfterSeconds = retryAfterSeconds
    }
}
