import Foundation
import Primitives
import UAF

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension OperationRunner {
    /// In-band authentication and transaction confirmation. Returns the authorization the server handed out.
    /// `redeemed` is the UAF request an out-of-band token answered, with the server that answered it: the request is
    /// then not asked for, and the device's accounts on that server are the candidates.
    package func authenticate(
        username: Username?, transaction requested: String? = nil,
        redeemed: (message: String, server: Server)? = nil
    ) async throws(OperationError) -> (any AuthorizationProvider)? {
        try core.checkIntegrity()
        let data = core.mirror.snapshot
        let server: Server
        let message: String
        if let redeemed {
            (message, server) = (redeemed.message, redeemed.server)
        } else {
            // A known user's own server; otherwise the configured one.
            server = username.flatMap { name in data.accounts.first { $0.username == name }?.server } ?? Server(baseUrl: core.configuration.baseUrl)
            struct Context: Encodable {
                var username: String?
                var transaction: [Transaction]?
            }
            let context = Context(
                username: username,
                transaction: requested.map {
                    [Transaction(contentType: "text/plain", content: Base64URL.encode(Array($0.utf8)))]
                })
            let contextJSON: String
            do { contextJSON = try UAFMessageCodec.encodeObject(context) } catch { throw .Unknown(cause: error) }
            message = try await fetchUAFRequest(
                server: server, path: core.configuration.authenticationRequestPath, op: .authentication, context: contextJSON)
        }
        let request = try decodeRequest(AuthenticationRequest.self, from: message, header: \.header)
        // A failure on the device from here on (a decline, a lock-out, no fitting authenticator) is reported to the
        // server, which ends the operation at once.
        let (response, registration, appAttestation) = try await reportingFailure(
            header: request.header, challenge: request.challenge, server: server, path: core.configuration.authenticationResponsePath,
            emptyResponse: { AuthenticationResponse(header: $0, fcParams: $1, assertions: []) }
        ) { () async throws(OperationError) -> (AuthenticationResponse, LocalRegistration, AppAttestationAnswer?) in
            let appID = try await checkAppID(request.header.appID)
            let transaction = try Self.transactionText(request.transaction)

            // Candidates: this device's registrations with the server that satisfy the policy with their own key.
            let candidates = data.registrations.filter { registration in
                guard registration.server == server, username == nil || registration.username == username,
                    let descriptor = core.module(registration.aaid)?.descriptor,
                    let scheme = descriptor.scheme(for: registration.signatureAlgorithm ?? SigningScheme.ecdsaP256.algorithm)
                else { return false }
                return PolicyMatcher.isSatisfied(request.policy, by: [descriptor.capabilities(for: scheme, keyIDs: [registration.keyID])])
            }
            guard !candidates.isEmpty else { throw .FidoError(errorCode: .noSuitableAuthenticator, cause: nil) }
            var shown = false
            let chosenUser = try await selectAccount(candidates: candidates, data: data, server: server, transaction: transaction, shown: &shown)
            let userCandidates = candidates.filter { $0.username == chosenUser }
            let compliant = Set(userCandidates.map { AAID.normalized($0.aaid) })
            // The transaction's content must reach the app before a mode-0x02 assertion is signed.
            let aaid: String
            if compliant.count == 1, shown || transaction == nil, objects.authenticatorSelector == nil, let only = compliant.first {
                aaid = only
            } else {
                aaid = try await selectAuthenticator(
                    account: AccountRecord(username: chosenUser, server: server), compliant: compliant, data: data,
                    transaction: transaction, mustShow: transaction != nil && !shown)
            }
            guard let registration = userCandidates.first(where: { AAID.equal($0.aaid, aaid) }), let module = core.module(aaid) else {
                throw .FidoError(errorCode: .noSuitableAuthenticator, cause: SDKMessage("\(aaid) is not registered for \(chosenUser)"))
            }
            guard let authenticator = core.authenticators(in: data).first(where: { AAID.equal($0.aaid, aaid) }) else {
                throw .FidoError(errorCode: .noSuitableAuthenticator, cause: nil)
            }
            try await module.verifyUser(registration: registration, authenticator: authenticator, session: session)
            try core.checkIntegrity()

            // The counter is advanced durably before anything is signed, so it never repeats.
            let counter = registration.signCounter &+ 1
            let keyID = registration.keyID
            do {
                try await core.commit { data in
                    if let index = data.registrations.firstIndex(where: { $0.keyID == keyID }) { data.registrations[index].signCounter = counter }
                }
            } catch { throw .Unknown(cause: error) }
            let fcParams = try finalChallenge(appID: appID, challenge: request.challenge)
            let assertion = try await module.sign(
                registration: registration, fcParams: fcParams, counter: counter, transaction: transaction,
                keyStore: core.keyStore)
            var header = request.header
            header.appID = appID
            // The app's attestation, when the server's policy asks for it (NevisProtocol's AppAttestationWire).
            let appAttestation = try await self.appAttestation(asked: request.header, fcParams: fcParams, server: server)
            header.exts = Self.extensions(header.exts, answering: appAttestation)
            let response = AuthenticationResponse(
                header: header, fcParams: fcParams, assertions: [AuthenticatorSignAssertion(assertion: Base64URL.encode(assertion))])
            return (response, registration, appAttestation)
        }
        let answer: ServerResponse
        do { answer = try await sendUAFResponse(server: server, path: core.configuration.authenticationResponsePath, response: response) } catch {
            if case .AppAttestationError = error { await appAttestationSettled(appAttestation, server: server, accepted: false) }
            throw error
        }
        await appAttestationSettled(appAttestation, server: server, accepted: true)
        // A dispatch target missing on this server (its creation failed, or DeviceInformationSync dropped one the
        // server no longer had) is created again with the session the authentication just opened.
        _ = await createDispatchTarget(username: registration.username, server: server, authorizedBy: answer)
        return Self.authorizationProvider(from: answer.additionalTokens ?? [], server: server.baseUrl)
    }

    /// The transaction this device can show: text/plain (uaf-spec §1.3, one per content type), as UTF-8 bytes.
    static func transactionText(_ transactions: [Transaction]?) throws(OperationError) -> Data? {
        guard let transactions, !transactions.isEmpty else { return nil }
        guard let transaction = transactions.first(where: { $0.contentType == "text/plain" }) else {
            throw .FidoError(errorCode: .invalidTransactionContent, cause: SDKMessage("no text/plain transaction to show"))
        }
        guard let content = Base64URL.decode(transaction.content), !content.isEmpty, String(data: content, encoding: .utf8) != nil else {
            throw .FidoError(errorCode: .invalidTransactionContent, cause: SDKMessage("the transaction is not UTF-8 text"))
        }
        return content
    }

    /// The one account to authenticate: the only candidate, or the app's choice through its account selector.
    private func selectAccount(
        candidates: [LocalRegistration], data: LocalStateData, server: Server, transaction: Data?,
        shown: inout Bool
    ) async throws(OperationError) -> Username {
        var usernames: [Username] = []
        for candidate in candidates where !usernames.contains(candidate.username) { usernames.append(candidate.username) }
        if usernames.count == 1 && (objects.accountSelector == nil || transaction == nil) { return usernames[0] }
        guard let selector = objects.accountSelector else {
            throw .FidoError(
                errorCode: .noSuitableAuthenticator, cause: SDKMessage("several accounts match: pass a username or set an accountSelector"))
        }
        let compliant = Dictionary(grouping: candidates, by: \.username).mapValues { Set($0.map { AAID.normalized($0.aaid) }) }
        let context = AccountSelectionContextValue(
            accounts: usernames.map { AccountRecord(username: $0, server: server) },
            authenticators: core.authenticators(in: data), transactionConfirmationData: transaction,
            compliant: compliant)
        let chosen: Username = try await interaction.ask { gate in
            selector.selectAccount(context: context, handler: TextAnswerHandler(gate: gate))
        }
        guard usernames.contains(chosen) else {
            throw .FidoError(errorCode: .noSuitableAuthenticator, cause: SDKMessage("\(chosen) is not an account that can authenticate here"))
        }
        shown = transaction != nil
        return chosen
    }

    /// The authorization a successful authentication hands the app, as the Nevis SDK does: the server's JWT
    /// when it sent one (usable as a bearer token against any instance), else its session cookie.
    static func authorizationProvider(from tokens: [Token], server: URL) -> (any AuthorizationProvider)? {
        if let jwt = tokens.first(where: { $0.type == .jwt }), !jwt.value.isEmpty { return JwtAuthorizationProvider(jwt: jwt.value) }
        if let cookie = tokens.first(where: { $0.type == .httpCookie }) {
            let cookies = HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": cookie.value], for: server)
            if !cookies.isEmpty { return CookieAuthorizationProvider(cookies) }
        }
        return nil
    }
}
