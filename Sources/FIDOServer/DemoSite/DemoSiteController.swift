import FIDOServerCore
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import Mustache
import NIOCore
import NevisProtocol
import WireJSON

/// The relying-party web demo (`mauth server --demo-site`): an "Example Bank" whose sign-up shows an enrollment QR
/// code and whose log-in asks the phone to confirm a transaction, by push or QR code. It plays the relying party's
/// backend with the server's own Auth Cloud service (enroll, approval), lets the browser poll `/api/v1/status`
/// with the status token, and verifies the result token as an outside backend would: with the published JWKS.
///
/// Server-side rendered (swift-mustache templates compiled into the binary), one style sheet, one small script;
/// a strict Content-Security-Policy allows nothing else. Off by default: whoever can open the page can enroll new
/// usernames and send approvals to the users the demo created, which is what a demo is for and what production must
/// never offer. It never reaches users it did not create (``AuthCloudService/mayReach(_:_:)``).
struct DemoSiteController {
    static let base = "/demo"
    let service: AuthCloudService
    let issuer: TokenIssuer
    let pages: DemoPages
    /// Passkeys, when the server has `fido2` configured: the start page then offers them beside the phone.
    let passkeys: PasskeyService?
    let onRejection: @Sendable (OperationName, ServiceFailure) -> Void

    /// What the demo site acts as when it calls the Auth Cloud service: a relying party's backend with a key.
    static let principal = Principal(source: .demoSite, subject: nil, isAdmin: true)
    /// The transaction the log-in form proposes.
    static let defaultMessage = "Pay CHF 250.00 to Example Shop"
    /// Form bodies are a few short fields; anything larger is not from our pages.
    static let maximumFormBytes = 8 * 1024

    struct SignUpForm: Decodable, Sendable {
        var username: String?
        var trimmedUsername: String { (username ?? "").trimmingCharacters(in: .whitespaces) }
    }
    struct LogInForm: Decodable, Sendable {
        var username: String?
        var message: String?
        var channel: String?
        var trimmedUsername: String { (username ?? "").trimmingCharacters(in: .whitespaces) }
    }
    struct ResultForm: Decodable, Sendable {
        var statusToken: String?
        var message: String?
    }
    struct PasskeyResultForm: Decodable, Sendable { var token: String? }

    func add(open: RouterGroup<ServerRequestContext>) {
        // A browser opening the server's address finds the demo, not a bare 404.
        open.get("/") { _, _ in Self.seeOther(Self.base) }
        // The form endpoints are POSTs; a browser that opens one (a reload, a bookmark, the address bar) is sent to
        // the start page, not answered with the API's JSON refusal.
        for path in ["signup", "login", "result", "cancel"] + (passkeys == nil ? [] : ["passkey/signup", "passkey/add", "passkey/result"]) {
            open.get(RouterPath(stringLiteral: "\(Self.base)/\(path)")) { _, _ in Self.seeOther(Self.base) }
        }
        open.get(RouterPath(stringLiteral: Self.base)) { request, _ in
            // A link from a passkey sign-in's result names the user, so the step-up with the phone is one click.
            // Escaped by the template like every other value; cut to the field's length.
            let username = String(((try? FormQuery(request.uri.query))?.get("username") ?? "").prefix(64))
            return page(pages.home(error: nil, signupUsername: "", loginUsername: username, loginMessage: Self.defaultMessage))
        }
        open.get("\(Self.base)/static/demo.css") { _, _ in
            asset(DemoPages.styleSheet, contentType: "text/css; charset=utf-8")
        }
        open.get("\(Self.base)/static/demo.js") { _, _ in
            asset(DemoPages.script, contentType: "text/javascript; charset=utf-8")
        }
        // The tab's icon (the layout links it); a browser that asks for /favicon.ico anyway is sent to it.
        open.get("\(Self.base)/static/favicon.svg") { _, _ in
            asset(DemoPages.icon, contentType: "image/svg+xml")
        }
        open.get("/favicon.ico") { _, _ in Self.seeOther("\(Self.base)/static/favicon.svg") }
        postForm(
            open, "signup", as: SignUpForm.self, name: "demo sign-up",
            home: { form in pages.home(signupUsername: form.trimmedUsername, loginUsername: "", loginMessage: Self.defaultMessage) }
        ) { form in
            let username = form.trimmedUsername
            let user = try await service.enroll(.init(username: username, userId: nil, channel: nil), principal: Self.principal)
            guard let enrollment = user.enrollment, let qrCode = enrollment.qrCode, let link = enrollment.appLinkUri else {
                throw ServiceFailure(.internalServerError, "enroll answered no app enrollment")
            }
            return pages.waiting(
                .init(
                    heading: "Scan with the app",
                    instructions: "Open the authenticator app on your phone and scan this code to register \(username).",
                    message: nil, qrCode: qrCode, appLinkUri: link, statusToken: enrollment.statusToken))
        }
        postForm(
            open, "login", as: LogInForm.self, name: "demo log-in",
            home: { form in
                pages.home(
                    signupUsername: "", loginUsername: form.trimmedUsername, loginMessage: form.message ?? "",
                    loginByApp: form.channel == "app")
            }
        ) { form in
            let username = form.trimmedUsername
            let message = form.message.flatMap { $0.isEmpty ? nil : $0 }
            let channel = form.channel == "app" ? "app" : "push"
            let answer = try await service.approval(
                .init(
                    username: username, userId: nil, authenticatorId: nil, channel: channel, prompt: nil,
                    message: message, notificationMessage: nil), principal: Self.principal)
            let instructions =
                channel == "push"
                ? "We sent a request to \(username)'s phone. Open it and confirm."
                : "Scan this code with the authenticator app on \(username)'s phone, then confirm."
            return pages.waiting(
                .init(
                    heading: message == nil ? "Confirm the log-in" : "Confirm the transaction", instructions: instructions, message: message,
                    qrCode: answer.qrCode, appLinkUri: answer.appLinkUri, statusToken: answer.statusToken))
        }
        postForm(
            open, "result", as: ResultForm.self, name: "demo result",
            home: { _ in pages.home(signupUsername: "", loginUsername: "", loginMessage: Self.defaultMessage) }
        ) { form in
            let outcome = try await service.outcome(.init(statusToken: form.statusToken ?? ""))
            return pages.result(
                try await result(outcome, statusToken: form.statusToken ?? "", message: form.message.flatMap { $0.isEmpty ? nil : $0 }))
        }
        if let passkeys { addPasskeys(open, passkeys) }
        // The waiting page's Cancel: the bank withdraws what it asked the phone for, so the phone can no longer
        // approve it, and shows how it ended (an answer that came first decides).
        postForm(
            open, "cancel", as: ResultForm.self, name: "demo cancel",
            home: { _ in pages.home(signupUsername: "", loginUsername: "", loginMessage: Self.defaultMessage) }
        ) { form in
            let request = AuthCloudService.StatusRequest(statusToken: form.statusToken ?? "")
            return pages.result(
                try await result(
                    try await service.cancel(request), statusToken: request.statusToken,
                    message: form.message.flatMap { $0.isEmpty ? nil : $0 }))
        }
    }

    /// The passkey part of the bank: the browser's script asks `passkey/signup` for registration options (the site
    /// acts as the relying party's backend, for a username it created or creates now), then talks to the FIDO2 API
    /// itself (`/nevisfido/fido2/…`, open, bound by the challenge); a sign-in's token comes back through the
    /// `passkey/result` form, whose page shows it verified as a backend would.
    private func addPasskeys(_ open: RouterGroup<ServerRequestContext>, _ passkeys: PasskeyService) {
        struct SignUp: Decodable { var username: String }
        // A new customer: registration options for a username nobody holds (``AuthCloudService/demoUser(username:)``).
        passkeyOptions(open, "passkey/signup", as: SignUp.self, name: "demo passkey sign-up", missing: "Send a username.") { signUp in
            let user = try await service.demoUser(username: signUp.username.trimmingCharacters(in: .whitespaces))
            return try await passkeys.registrationOptions(.init(username: user.username, displayName: user.username), principal: Self.principal)
        }
        struct Add: Decodable {
            var proof: String
            /// For the automatic upgrade after a phone's log-in (conditional create).
            var conditional: Bool?
        }
        // A customer who just signed in adds a passkey to her own account: the proof is the token of that sign-in (a
        // phone's log-in or a passkey's), verified as the result page verifies it, and no older than
        // ``stepUpSeconds``. This is the only way the demo adds a factor to an account someone holds.
        passkeyOptions(open, "passkey/add", as: Add.self, name: "demo passkey add", missing: "Sign in first.") { add in
            let username = try await signedInUser(add.proof)
            let user = try await service.demoUserSignedIn(username: username)
            return try await passkeys.registrationOptions(
                .init(username: user.username, displayName: user.username, mediation: add.conditional == true ? "conditional" : nil),
                principal: Self.principal)
        }
        postForm(
            open, "passkey/result", as: PasskeyResultForm.self, name: "demo passkey result",
            home: { _ in pages.home(signupUsername: "", loginUsername: "", loginMessage: Self.defaultMessage) }
        ) { form in
            pages.result(try await passkeyResult(form.token ?? ""))
        }
    }

    /// How recent a sign-in must be to add a passkey with it (the server's `tokens.recentAuthenticationSeconds` default).
    static let stepUpSeconds: TimeInterval = 300

    /// A JSON endpoint of the passkey card that answers registration options (or a refusal in the FIDO2 API's shape).
    private func passkeyOptions<Body: Decodable & Sendable>(
        _ open: RouterGroup<ServerRequestContext>, _ path: String, as type: Body.Type, name: OperationName,
        missing: String, _ options: @escaping @Sendable (Body) async throws -> FIDO2API.CreationOptions
    ) {
        open.post(RouterPath(stringLiteral: "\(Self.base)/\(path)")) { request, _ in
            guard request.headers[.contentType]?.lowercased().hasPrefix("application/json") == true else {
                return FIDO2Controller.failed(.unsupportedMediaType, "Content-Type must be application/json")
            }
            do {
                let body = try await request.body.collect(upTo: Self.maximumFormBytes)
                guard let decoded = try? WireJSONDecoder().decode(Body.self, from: body.readableBytesView) else {
                    return FIDO2Controller.failed(.badRequest, missing)
                }
                return Wire.json(try await options(decoded), contentType: Wire.jsonContentType)
            } catch let refusal as Refusal {
                onRejection(name, ServiceFailure(.badRequest, refusal.message))
                return FIDO2Controller.failed(refusal.status, refusal.message)
            } catch let failure as ServiceFailure where failure.status != .internalServerError {
                onRejection(name, failure)
                return FIDO2Controller.failed(.badRequest, failure.detail)
            } catch {
                onRejection(name, ServiceFailure(.internalServerError, "\(error)"))
                return FIDO2Controller.failed(.internalServerError, "Something went wrong on our side. Try again.")
            }
        }
    }

    /// The user a recent sign-in's token names: a passkey sign-in's session token, or a phone log-in's result token
    /// (an approval that succeeded). Refused when it does not verify, proves something else, or is older than
    /// ``stepUpSeconds``.
    private func signedInUser(_ proof: String) async throws -> String {
        let refusal = Refusal(.unauthorized, "sign_in_required", "Sign in again first: adding a passkey needs a sign-in of the last five minutes.")
        let issuedAt: Date
        let username: String
        if let session = try? await verifiedSessionToken(proof) {
            (issuedAt, username) = (session.iat.value, session.sub.value)
        } else if proof.utf8.count <= 4096, let result = try? await verifyResultToken(proof), result.op == "approval", result.status == "succeeded" {
            (issuedAt, username) = (result.iat.value, result.username)
        } else {
            throw refusal
        }
        // Why: a token someone found later (a screenshot, a shared machine) must not add a factor to her account.
        guard abs(Date().timeIntervalSince(issuedAt)) <= Self.stepUpSeconds else { throw refusal }
        return username
    }

    /// The claims of this server's session JWT that the passkey result shows. Verified with JWTKit's own claim types,
    /// as an outside backend would.
    struct SessionTokenClaims: JWTPayload {
        var iss: IssuerClaim
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        var sid: String
        var keyid: String
        var method: String?
        var token_use: String?
        func verify(using algorithm: some JWTAlgorithm) async throws { try exp.verifyNotExpired() }
    }

    /// A passkey sign-in's session token, verified with the published JWKS; nil when it is not one.
    private func verifiedSessionToken(_ token: String) async throws -> SessionTokenClaims? {
        let keys = JWTKeyCollection()
        try await keys.add(jwksJSON: String(decoding: try JSONEncoder().encode(issuer.jwks), as: UTF8.self))
        guard token.utf8.count <= 4096, let claims = try? await keys.verify(token, as: SessionTokenClaims.self),
            claims.iss.value == issuer.issuer, claims.method == "passkey", claims.token_use == "authentication"
        else { return nil }
        return claims
    }

    private func passkeyResult(_ token: String) async throws -> DemoPages.Result {
        guard let claims = try await verifiedSessionToken(token) else {
            throw Refusal(.badRequest, "bad_token", "That sign-in could not be verified. Sign in again.")
        }
        let formatter = ISO8601DateFormatter()
        let welcome = try await service.demoWelcome(username: claims.sub.value, recent: Self.stepUpSeconds)
        var result = DemoPages.Result(
            outcome: "succeeded", heading: "Signed in with a passkey",
            summary: welcome.isNew
                ? "Welcome, \(claims.sub.value): your account is ready. Your passkey proved it is you; no phone and no password were needed."
                : "Welcome back, \(claims.sub.value). Your passkey proved it is you; no phone and no password were needed.",
            message: nil, transactionCheck: nil, transactionCheckClass: nil,
            claims: [
                ("iss", claims.iss.value), ("sub", claims.sub.value), ("method", claims.method ?? "–"), ("token_use", claims.token_use ?? "–"),
                ("keyid (credential)", claims.keyid), ("sid", claims.sid), ("iat", formatter.string(from: claims.iat.value)),
                ("exp", formatter.string(from: claims.exp.value)),
            ].map { DemoPages.Claim(name: $0.0, value: $0.1) },
            pending: false, statusToken: "")
        result.hasClaims = true
        result.tokenKind = "session token"
        result.checks = "issuer, expiry, what proved the user (method) and what the token is for (token_use)"
        // A payment is confirmed on the phone: offered only to a user who holds one.
        result.stepUpUsername = welcome.hasPhone ? claims.sub.value : nil
        // The sign-in set the session cookie in this browser: the page lists her passkeys with it.
        result.ownPasskeys = true
        (result.passkeyProof, result.passkeyUsername) = (token, claims.sub.value)
        return result
    }

    /// 303 to `location` on this server: a browser follows it with a GET.
    static func seeOther(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location, .cacheControl: "no-store"])
    }

    /// A form endpoint: decodes the form and renders the page `body` returns, or the start page (filled in by
    /// `home` from the form) with the refusal.
    private func postForm<Form: Decodable & Sendable>(
        _ group: RouterGroup<ServerRequestContext>, _ path: String, as type: Form.Type, name: OperationName,
        home: @escaping @Sendable (Form) -> (String?) -> String,
        _ body: @escaping @Sendable (Form) async throws -> String
    ) {
        group.post(RouterPath(stringLiteral: "\(Self.base)/\(path)")) { request, _ in
            let form: Form
            switch await decodeForm(request, as: Form.self) {
            case .failure(let refusal): return refusal.response
            case .success(let decoded): form = decoded
            }
            do { return page(try await body(form)) } catch { return refusal(error, name: name, home: home(form)) }
        }
    }

    // MARK: The result: the backend's side of "approved"

    /// The claims a relying party's backend checks in a result token. Verified with JWTKit's own claim types
    /// (expiry, audience, issuer), not with the server's code, so the demo checks the token the way an outside
    /// backend would.
    struct ResultTokenClaims: JWTPayload {
        var iss: IssuerClaim
        var aud: AudienceClaim
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        var username: String
        var transaction_id: String
        var op: String
        var status: String
        var aaid: String?
        var keyid: String?
        var txn_hash: String?
        func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
            try aud.verifyIntendedAudience(includes: AuthCloudService.ResultClaims.audience)
        }
    }

    private func result(
        _ outcome: (answer: AuthCloudService.StatusAnswer, ending: AuthCloudService.Ending?), statusToken: String,
        message: String?
    ) async throws -> DemoPages.Result {
        let status = outcome.answer
        var result = DemoPages.Result(
            outcome: status.status, heading: "", summary: "", message: message, transactionCheck: nil,
            transactionCheckClass: nil, claims: [], pending: false, statusToken: statusToken)
        switch status.status {
        case "succeeded":
            guard let token = status.token else { throw ServiceFailure(.internalServerError, "succeeded without a result token") }
            let claims = try await verifyResultToken(token)
            let registered = claims.op == "enroll"
            result.heading = registered ? "Registered" : (message == nil ? "Logged in" : "Transaction confirmed")
            result.summary =
                registered
                ? "\(claims.username)'s phone is registered. Log in with it from the start page."
                : "Welcome back, \(claims.username). Your phone confirmed \(message == nil ? "the log-in" : "this transaction")."
            if let message {
                // The token carries the hash of the text the phone signed; compare it with the text this page asked for.
                let matches = claims.txn_hash == AuthCloudService.transactionHash(of: message)
                result.transactionCheck =
                    matches
                    ? "✓ The phone confirmed exactly this text: its SHA-256 is the token's txn_hash."
                    : "✗ The token's txn_hash does not match this text."
                result.transactionCheckClass = matches ? "ok" : "bad"
            }
            let formatter = ISO8601DateFormatter()
            result.claims = [
                ("iss", claims.iss.value), ("aud", claims.aud.value.joined(separator: " ")), ("sub (userId)", claims.sub.value),
                ("username", claims.username), ("op", claims.op), ("status", claims.status), ("transaction_id", claims.transaction_id),
                ("aaid", claims.aaid ?? "–"), ("keyid", claims.keyid ?? "–"), ("txn_hash", claims.txn_hash ?? "–"),
                ("iat", formatter.string(from: claims.iat.value)), ("exp", formatter.string(from: claims.exp.value)),
            ].map { DemoPages.Claim(name: $0.0, value: $0.1) }
            result.hasClaims = true
            if passkeys != nil, claims.op == "approval" { (result.passkeyProof, result.passkeyUsername) = (token, claims.username) }
        case "pending":
            result.heading = "Still waiting"
            result.summary = "Your phone has not answered yet."
            result.pending = true
        case "failed", "cancelled":
            switch outcome.ending ?? .failed {
            case .declined:
                result.heading = "Declined on the phone"
                result.summary = "The request was declined on the phone. Nothing was approved."
            case .failed:
                result.heading = "Failed on the phone"
                result.summary = "The phone could not complete the request. Nothing was approved."
            case .expired:
                result.heading = "Expired"
                result.summary = "Nobody answered in time. Nothing was approved; start again."
            case .cancelled:
                result.heading = "Cancelled"
                result.summary = "You cancelled the request. Nothing was approved, and the phone can no longer approve it."
            }
            result.ending = "\(outcome.ending ?? .failed)"
        default:
            result.heading = "Unknown request"
            result.summary = "This request is unknown or too old. Start again."
        }
        return result
    }

    /// Verifies a result token with the JWKS document this server publishes at `/.well-known/jwks.json`.
    private func verifyResultToken(_ token: String) async throws -> ResultTokenClaims {
        let keys = JWTKeyCollection()
        try await keys.add(jwksJSON: String(decoding: try JSONEncoder().encode(issuer.jwks), as: UTF8.self))
        let claims = try await keys.verify(token, as: ResultTokenClaims.self)
        guard claims.iss.value == issuer.issuer else { throw ServiceFailure(.internalServerError, "result token from another issuer") }
        return claims
    }

    // MARK: Responses

    /// Pages allow their own style sheet and script, `data:` images (the QR code) and fetches to this origin only.
    static let securityHeaders: HTTPFields = [
        HTTPField.Name("Content-Security-Policy")!:
            "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff", HTTPField.Name("Referrer-Policy")!: "no-referrer", .cacheControl: "no-store",
    ]

    private func page(_ html: String, status: HTTPResponse.Status = .ok) -> Response {
        var headers = Self.securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    private func asset(_ text: String, contentType: String) -> Response {
        var headers = Self.securityHeaders
        headers[.contentType] = contentType
        headers[.cacheControl] = "public, max-age=300"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// A refusal shown on the start page: the service's own message for what the user can fix (a bad username,
    /// an unknown user, a text outside the allowed subset), a generic one for anything else.
    private func refusal(_ error: any Error, name: OperationName, home: (String?) -> String) -> Response {
        switch error {
        case let failure as Refusal:
            onRejection(name, ServiceFailure(.badRequest, "\(failure.status.code) \(failure.message)"))
            return page(home(failure.message), status: failure.status)
        case let failure as ServiceFailure where failure.status != .internalServerError:
            onRejection(name, failure)
            return page(home("The request was refused: \(failure.status.reasonPhrase)."), status: .badRequest)
        default:
            onRejection(name, ServiceFailure(.internalServerError, "\(error)"))
            return page(home("Something went wrong on our side. Try again."), status: .internalServerError)
        }
    }

    private func decodeForm<Form: Decodable>(_ request: Request, as type: Form.Type) async -> Result<Form, FormRefusal> {
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else {
            return .failure(
                FormRefusal(
                    page(
                        pages.home(
                            error: "Send the form from this site.", signupUsername: "", loginUsername: "",
                            loginMessage: Self.defaultMessage), status: .unsupportedMediaType)))
        }
        do {
            let body = try await request.body.collect(upTo: Self.maximumFormBytes)
            return .success(try URLEncodedFormDecoder().decode(Form.self, from: String(buffer: body)))
        } catch {
            onRejection("demo form", ServiceFailure(.badRequest, "unreadable form: \(error)"))
            return .failure(
                FormRefusal(
                    page(
                        pages.home(
                            error: "The form could not be read.", signupUsername: "", loginUsername: "",
                            loginMessage: Self.defaultMessage), status: .badRequest)))
        }
    }

    struct FormRefusal: Error {
        let response: Response
        init(_ response: Response) { self.response = response }
    }
}

/// The demo site's templates and assets, compiled into the binary (Package.swift embeds `DemoSite/Site/`).
struct DemoPages: Sendable {
    let library: MustacheLibrary

    static let styleSheet = String(decoding: PackageResources.demo_css, as: UTF8.self)
    static let script = String(decoding: PackageResources.demo_js, as: UTF8.self)
    static let icon = String(decoding: PackageResources.favicon_svg, as: UTF8.self)

    struct Waiting {
        var heading: String
        var instructions: String
        var message: String?
        /// The transaction as the phone shows it (the limited HTML subset rendered, everything else escaped), set
        /// when the page is rendered.
        var messageHTML: String? = nil
        var qrCode: AuthCloudService.QRCodeImage?
        var appLinkUri: String?
        var statusToken: String
    }

    struct Claim {
        var name: String
        var value: String
    }

    struct Result {
        var outcome: String
        var heading: String
        var summary: String
        var message: String?
        /// The transaction as the phone shows it (the limited HTML subset rendered, everything else escaped), set
        /// when the page is rendered.
        var messageHTML: String? = nil
        var transactionCheck: String?
        var transactionCheckClass: String?
        var claims: [Claim]
        var pending: Bool
        var statusToken: String
        /// Why an operation did not succeed (`declined`, `failed`, `expired`, `cancelled`), empty otherwise.
        var ending = ""
        /// Stored, not computed: templates see stored properties only (they render through `Mirror`).
        var hasClaims: Bool = false
        /// What the verified token is: the Auth Cloud result token, or this server's session token after a passkey.
        var tokenKind = "result token"
        /// The claims this site checks besides the signature.
        var checks = "issuer, audience and expiry"
        /// After a passkey sign-in: the user whose payment the phone may confirm next (a link to the log-in form).
        var stepUpUsername: String?
        /// After a sign-in, when the server has passkeys: the sign-in's token, which lets its owner add a passkey to
        /// her account (`passkey/add`) for ``DemoSiteController/stepUpSeconds``, and her username.
        var passkeyProof: String?
        var passkeyUsername: String?
        /// After a passkey sign-in, whose session cookie this browser now holds: the page shows "Your passkeys" (the
        /// FIDO2 API's own list, rename and removal, called by the page's script with that cookie).
        var ownPasskeys = false
    }

    struct Home {
        var error: String?
        var signupUsername: String
        var loginUsername: String
        var loginMessage: String
        /// The channel chosen before a refusal brought the form back: a QR code stays chosen.
        var loginByApp: Bool
        /// Whether the server has passkeys (`fido2`): the start page then shows their card.
        var passkeys: Bool
        /// Whether the page is served with the development certificate: the start page then says how to trust it.
        var developmentCertificate: Bool
    }

    /// Whether the start page offers passkeys.
    let passkeys: Bool
    /// Whether the server uses its development certificate, which a browser warns about until it is trusted.
    let developmentCertificate: Bool

    init(passkeys: Bool = false, developmentCertificate: Bool = false) throws {
        var library = MustacheLibrary()
        for (name, bytes) in [
            ("layout", PackageResources.layout_mustache), ("home", PackageResources.home_mustache),
            ("waiting", PackageResources.waiting_mustache), ("result", PackageResources.result_mustache),
        ] {
            try library.register(String(decoding: bytes, as: UTF8.self), named: name)
        }
        self.library = library
        self.passkeys = passkeys
        self.developmentCertificate = developmentCertificate
    }

    /// The start page; `error` is shown above the forms.
    func home(error: String?, signupUsername: String, loginUsername: String, loginMessage: String, loginByApp: Bool = false) -> String {
        render(
            Home(
                error: error, signupUsername: signupUsername, loginUsername: loginUsername, loginMessage: loginMessage,
                loginByApp: loginByApp, passkeys: passkeys, developmentCertificate: developmentCertificate), "home")
    }

    /// The start page with its fields filled in, waiting for the error a refusal shows.
    func home(signupUsername: String, loginUsername: String, loginMessage: String, loginByApp: Bool = false) -> (String?) -> String {
        { error in
            home(error: error, signupUsername: signupUsername, loginUsername: loginUsername, loginMessage: loginMessage, loginByApp: loginByApp)
        }
    }

    func waiting(_ page: Waiting) -> String {
        var page = page
        page.messageHTML = page.message.map(LimitedHTML.htmlText)
        return render(page, "waiting")
    }

    func result(_ page: Result) -> String {
        var page = page
        page.messageHTML = page.message.map(LimitedHTML.htmlText)
        return render(page, "result")
    }

    private func render(_ object: Any, _ name: String) -> String {
        // Every template is registered in init, so a nil here is a programming error caught by the tests.
        library.render(object, withTemplate: name) ?? "<!doctype html><title>Template \(name) missing</title>"
    }
}
