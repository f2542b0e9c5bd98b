import Crypto
import FIDOAttestation
import Foundation
import NevisProtocol
import Primitives
import WebAuthn
import WireJSON

/// Passkeys behind the same door as UAF (nevisFIDO's FIDO2 API): registration options for a caller who may register
/// keys for the user (the same rule as a UAF registration request), authentication options for anyone, and the two
/// results, bound to their options by the challenge the browser signs. A sign-in opens the same session, JWT and
/// cookie as a UAF login, with `method` `passkey`. Every WebAuthn check is the `WebAuthn` module's; this orchestrates
/// and stores.
package struct PasskeyService: Sendable {
    let environment: ServiceEnvironment
    package let settings: PasskeySettings
    /// The metadata a registration's attestation and a sign-in's authenticator status are checked against.
    let metadataSource: MetadataSource
    let stores: UsedStores

    /// The stores a passkey ceremony reads and writes: the passkeys, their pending ceremonies, and a sign-in's completion (counter and session in one unit).
    struct UsedStores: Sendable {
        let passkeys: PasskeyStore
        let passkeyCeremonies: PasskeyCeremonyStore
        let ceremonies: CeremonyStore
        /// The sessions a removed passkey opened, which end with it.
        let sessions: SessionStore
        init(_ stores: Stores) {
            sessions = stores.sessions
            passkeys = stores.passkeys
            passkeyCeremonies = stores.passkeyCeremonies
            ceremonies = stores.ceremonies
        }
    }

    /// Random bytes in a challenge (WebAuthn §13.4.3 asks for at least 16).
    static let challengeBytes = 32
    /// Random bytes in a new user handle (at most 64 allowed; never the username, which the authenticator stores).
    static let userHandleBytes = 32
    /// Members of `extensions` an options request may carry; they are echoed, never stored.
    static let maximumExtensions = 16
    /// The longest `extensions` an options request may carry, as the server writes it back (JSON bytes): the
    /// extensions a browser knows take a few hundred (a `prf` salt is 32 bytes).
    static let maximumExtensionBytes = 4096
    /// The longest display name and passkey name, in UTF-8 bytes.
    static let maximumNameBytes = 256
    /// The longest refusal kept as a ceremony's outcome for the status service, in characters (the WebAuthn core's
    /// reasons take up to about 150).
    static let maximumOutcomeCharacters = 200
    /// The refusal of an answer whose challenge is unknown, expired, answered, refused or cancelled: one wording for
    /// all of them.
    static let unknownChallenge = Refusal(.badRequest, "unknown_challenge", "the challenge is unknown, expired or already answered")
    /// Transports kept per passkey, each a short token (`usb`, `internal`, `hybrid`…).
    static let maximumTransports = 8

    /// The answer of a sign-in: the API's response with the session's JWT, and the cookie to set.
    package struct SignedIn: Sendable {
        package var response: FIDO2API.ServerResponse
        package var jwt: String
        package var setCookie: String
    }

    // MARK: Registration

    /// Registration options for `request.username`, if `principal` may register keys for her (the same rule as a UAF
    /// registration request: her own credential, the relying party's token or proxy, and a recent login for a
    /// session). Her passkeys are excluded, so an authenticator does not register twice.
    package func registrationOptions(_ request: FIDO2API.OptionsRequest, principal: Principal) async throws -> FIDO2API.CreationOptions {
        let username = request.username
        try ServiceEnvironment.validate(username: username)
        let displayName = request.displayName.flatMap { $0.isEmpty ? nil : $0 } ?? username
        try Self.validate(name: displayName, member: "displayName")
        guard principal.mayRegisterFor(username) else {
            throw AuthorizationFailure.forbidden("\(principal.subject ?? "?") (\(principal.source)) may not register a passkey for \(username)")
        }
        try environment.signIn.requireRecentAuthentication(principal)
        let selection = request.authenticatorSelection ?? FIDO2API.AuthenticatorSelection()
        let userVerification = try settings.userVerification(asked: selection.userVerification)
        let residentKey = selection.residentKey ?? (selection.requireResidentKey == true ? "required" : settings.configuration.residentKey)
        guard ServerConfiguration.FIDO2.requirements.contains(residentKey) else {
            throw Refusal(.badRequest, "bad_request", "authenticatorSelection.residentKey must be required, preferred or discouraged")
        }
        if let attachment = selection.authenticatorAttachment, !["platform", "cross-platform"].contains(attachment) {
            throw Refusal(.badRequest, "bad_request", "authenticatorSelection.authenticatorAttachment must be platform or cross-platform")
        }
        let attestation = try settings.conveyance(asked: request.attestation)
        let hints = try settings.hints(asked: request.hints)
        // Conditional create: only `conditional` is a mediation that changes what the answer is held to.
        guard request.mediation == nil || request.mediation == "conditional" else {
            throw Refusal(.badRequest, "bad_request", "mediation must be conditional or absent")
        }
        let extensions = try Self.echoed(request.extensions, adding: ["credProps": .bool(true)], overriding: settings.registrationExtensions)
        let existing = try await stores.passkeys.passkeys(username: username)
        try refuseOverCap(username, holding: existing.count, step: "passkey registration options")
        let userHandle = existing.first?.userHandle ?? Base64URL.encode(SecureRandom.bytes(Self.userHandleBytes))
        var record = newCeremony(.registration, username: username, userHandle: userHandle, userVerification: userVerification)
        record.conditional = request.mediation == "conditional"
        // Counted against her cap, like a UAF registration request: only a caller who may act for her asks for one.
        let cap = CeremonyCap(username: username, limit: environment.limits.outstandingRequestsPerUsername, now: environment.clock())
        guard try await stores.passkeyCeremonies.open(record, cap: cap) else {
            environment.decide("passkey registration options", username, 429, "refused: \(cap.limit) ceremonies unanswered")
            throw Refusal(
                .tooManyRequests, "too_many_requests",
                "\(environment.limits.outstandingRequestsPerUsername) ceremonies of this user are unanswered; answer or let them expire",
                retryAfterSeconds: Int(settings.timeout))
        }
        environment.decide(
            "passkey registration options", username, 200,
            "issued challenge \(record.challenge.prefix(10))… valid \(settings.configuration.timeoutSeconds) s (authorized by \(principal.source))")
        return FIDO2API.CreationOptions(
            fido2SessionId: record.sessionID, rp: .init(id: settings.configuration.rpId, name: settings.rpName),
            user: .init(name: username, id: userHandle, displayName: displayName), challenge: record.challenge,
            pubKeyCredParams: settings.algorithms.map { .init(alg: $0.rawValue) }, timeout: settings.configuration.timeoutSeconds * 1000,
            excludeCredentials: existing.map { .init(id: $0.credentialID, transports: $0.transports.isEmpty ? nil : $0.transports) },
            authenticatorSelection: .init(
                authenticatorAttachment: selection.authenticatorAttachment, residentKey: residentKey,
                requireResidentKey: residentKey == "required", userVerification: userVerification.rawValue),
            attestation: attestation, extensions: extensions, hints: hints)
    }

    /// Verifies a new passkey (WebAuthn §7.1) against the ceremony its challenge names and stores it.
    package func registrationResult(_ credential: FIDO2API.Credential) async throws -> FIDO2API.ServerResponse {
        let (credentialID, clientDataJSON) = try Self.readCommon(credential)
        guard let attestationObject = credential.response.attestationObject.flatMap(Base64URL.decodeBytes), !attestationObject.isEmpty else {
            throw Refusal(.badRequest, "bad_request", "response.attestationObject must be non-empty base64url")
        }
        let name = try credential.userFriendlyName.map { name in
            try Self.validate(name: name, member: "userFriendlyName")
            return name
        }
        let ceremony = try await take(clientDataJSON, kind: .registration).ceremony
        try await settling(ceremony, taken: true) {
            try await register(
                credential, id: credentialID, clientDataJSON: clientDataJSON, attestationObject: attestationObject, name: name, ceremony: ceremony)
        }
        try await stores.passkeyCeremonies.finish(
            challenge: ceremony.challenge, succeeded: true, outcome: nil, credentialID: Base64URL.encode(credentialID))
        return FIDO2API.ServerResponse(status: "ok", errorMessage: "", fido2SessionId: ceremony.sessionID)
    }

    /// Verifies and stores the new passkey of an answered registration ceremony.
    private func register(
        _ credential: FIDO2API.Credential, id credentialID: [UInt8], clientDataJSON: [UInt8], attestationObject: [UInt8], name: String?,
        ceremony: PasskeyCeremony
    ) async throws {
        guard let username = ceremony.username, let userHandle = ceremony.userHandle else {
            throw Refusal(.badRequest, "bad_request", "the challenge was issued for another ceremony")
        }
        let transports = Array((credential.response.transports ?? []).filter(Self.isTransport).prefix(Self.maximumTransports))
        let verified: VerifiedRegistration
        do {
            let metadata = metadataSource
            let ceremonyRules = RegistrationCeremony(
                relyingParty: settings.relyingParty, policy: settings.policy,
                trust: AttestationTrust(
                    roots: settings.roots, metadata: { metadata.store.fido2Metadata(aaguid: $0) },
                    keyIdentifierMetadata: { metadata.store.fido2Metadata(attestationCertificateKeyIdentifier: $0) },
                    revocationLists: settings.revocationLists))
            verified = try await ceremonyRules.verify(
                RegistrationResponse(
                    credentialID: credentialID, clientDataJSON: clientDataJSON, attestationObject: attestationObject, transports: transports),
                expected: RegistrationExpectation(
                    challenge: Base64URL.decodeBytes(ceremony.challenge) ?? [],
                    userVerification: UserVerificationRequirement(rawValue: ceremony.userVerification) ?? .required,
                    algorithms: settings.algorithms, conditional: ceremony.conditional),
                now: environment.clock())
        } catch {
            environment.decide("passkey registration", username, 400, "refused: \(error)")
            throw Refusal(.badRequest, "registration_refused", error.description)
        }
        let record = PasskeyRecord(
            credentialID: Base64URL.encode(verified.credentialID), username: username, userHandle: userHandle, publicKey: verified.publicKey.encoded,
            signCount: verified.signCount, userVerifiedAtRegistration: verified.userVerified, backupEligible: verified.backupEligible,
            backupState: verified.backupState, transports: transports, aaguid: AAGUID.text(verified.aaguid),
            attestationFormat: verified.attestation.format, attestationType: verified.attestation.type.rawValue,
            discoverable: Self.residentKey(credential.clientExtensionResults), name: name, createdAt: environment.clock(),
            trust: verified.trustAnchor == nil ? "untrusted" : "trusted")
        // nevisFIDO's enforceCredentialProtectionPolicy, checked here too: the browser's enforcement is the client's
        // word, and an authenticator that does not apply the protection would let its credential be used without
        // user verification (level 1) or be listed without the credential ID (level 2).
        if let protection = settings.configuration.credentialProtection, protection.enforce,
            (verified.credentialProtection ?? 0) < protection.level
        {
            let reported = verified.credentialProtection.map { "credProtect \($0)" } ?? "no credProtect"
            environment.decide(
                "passkey registration", username, 400, "refused: the authenticator reported \(reported), \(protection.policy) is enforced")
            throw Refusal(
                .badRequest, "registration_refused",
                "the authenticator did not apply credential protection \(protection.policy) (it reported \(reported))")
        }
        // Counted again: options issued before she reached the cap may still be answered. Two results of hers that
        // commit at once on PostgreSQL may both pass; her unanswered ceremonies (a limit of their own) bound that.
        try refuseOverCap(username, holding: try await stores.passkeys.count(username: username), step: "passkey registration")
        // §7.1 step 26: a credential ID registered before (to anyone) is refused; the primary key decides, on every instance.
        guard try await stores.passkeys.insert(record) else {
            environment.decide("passkey registration", username, 400, "refused: credential \(record.credentialID.prefix(10))… is already registered")
            throw Refusal(.badRequest, "registration_refused", "this credential is already registered")
        }
        environment.decide(
            "passkey registration", username, 200,
            "registered passkey \(record.credentialID.prefix(10))… (\(record.aaguid)\(verified.modelBound || verified.aaguid == AAGUID.zero ? "" : " unbound"), \(record.attestationFormat), \(record.attestationType), \(record.trust ?? "untrusted")\(verified.credentialProtection.map { ", credProtect \($0)" } ?? ""))"
        )
    }

    // MARK: Authentication

    /// Authentication options. Open to anyone (a sign-in page asks before anyone is known). With a username, the
    /// answer must come from one of that user's passkeys; without one (`""`), from any discoverable passkey, whose
    /// user handle names its user. A caller who may act for her gets her credential IDs (404 when she has none);
    /// anyone else what ``ServerConfiguration/FIDO2/allowCredentials`` says: her IDs (`list`, the default, and
    /// `listWithDecoys`, where a username without passkeys gets decoys instead of an empty list), or nothing.
    ///
    /// `onlyCredential` (the Auth Cloud's approval for one passkey, by a caller who may act for her) narrows the
    /// sign-in to that one of her passkeys: it alone is listed, and the ceremony accepts no other answer.
    package func authenticationOptions(
        _ request: FIDO2API.OptionsRequest, caller: Principal?, onlyCredential: String? = nil
    ) async throws -> FIDO2API.RequestOptions {
        let username = request.username.isEmpty ? nil : request.username
        if let username { try ServiceEnvironment.validate(username: username) }
        let userVerification = try settings.userVerification(asked: request.userVerification)
        let extensions = try Self.echoed(request.extensions, adding: [:])
        let hints = try settings.hints(asked: request.hints)
        var allow: [FIDO2API.CredentialDescriptor] = []
        let authorized = username.map { ServiceEnvironment.authorizes(caller, for: $0) } ?? false
        // Only for a caller who may act for her: anyone else would learn from the 404 whether the ID is hers.
        if onlyCredential != nil, username == nil || !authorized {
            throw AuthorizationFailure.forbidden("only a caller who may act for the user may narrow a sign-in to one passkey")
        }
        let readsPasskeys = username != nil && (authorized || settings.configuration.allowCredentials != "authorizedCallers")
        var record = newCeremony(.authentication, username: username, userHandle: nil, userVerification: userVerification)
        record.credentialID = onlyCredential
        // Not counted against the user: anyone may name any user, and counted ceremonies would let them lock her out.
        // The per-address rate limit and the lifetime bound what an anonymous caller makes the server store. Stored
        // only where the options below are answered: a refusal stores nothing.
        let (passkeys, opened) = try await stores.ceremonies.openPasskeySignIn(
            record, passkeysOf: readsPasskeys ? username : nil, requiringPasskeys: authorized, credentialID: onlyCredential)
        if let username, readsPasskeys {
            if passkeys.isEmpty {
                // For a caller who may act for her, a user without passkeys is told as such (a step-up cannot work).
                if authorized {
                    environment.decide("passkey authentication options", username, 404, "refused: no passkey registered")
                    throw Refusal(.notFound, "no_passkey", "no passkey is registered for this user")
                }
                // Anyone else: an empty list, or decoys of the usual shape, after the same statement a user with
                // passkeys costs, so neither the answer nor its time tells that she has none.
                allow = settings.decoys(for: username)
            } else {
                allow = passkeys.map { .init(id: $0.credentialID, transports: $0.transports.isEmpty ? nil : $0.transports) }
            }
        }
        if let onlyCredential {
            allow = allow.filter { $0.id == onlyCredential }
            guard !allow.isEmpty else {
                environment.decide(
                    "passkey authentication options", username, 404, "refused: \(onlyCredential.prefix(10))… is not her passkey")
                throw Refusal(.notFound, "no_passkey", "the user holds no passkey with this id")
            }
        }
        // Every case the store declines to open is refused above.
        guard opened else { throw StoreError.malformedRow("webauthn_ceremonies: a sign-in's ceremony was not stored") }
        environment.decide(
            "passkey authentication options", username, 200,
            "issued challenge \(record.challenge.prefix(10))…\(username == nil ? " for a sign-in without a username" : "")")
        return FIDO2API.RequestOptions(
            fido2SessionId: record.sessionID, challenge: record.challenge, timeout: settings.configuration.timeoutSeconds * 1000,
            rpId: settings.configuration.rpId, allowCredentials: allow, userVerification: userVerification.rawValue,
            extensions: extensions, hints: hints)
    }

    /// Verifies a sign-in (WebAuthn §7.2), advances the passkey's counter by compare-and-set, and opens a session.
    package func authenticationResult(_ credential: FIDO2API.Credential) async throws -> SignedIn {
        let (credentialID, clientDataJSON) = try Self.readCommon(credential)
        guard let authenticatorData = credential.response.authenticatorData.flatMap(Base64URL.decodeBytes), !authenticatorData.isEmpty else {
            throw Refusal(.badRequest, "bad_request", "response.authenticatorData must be non-empty base64url")
        }
        guard let signature = credential.response.signature.flatMap(Base64URL.decodeBytes), !signature.isEmpty else {
            throw Refusal(.badRequest, "bad_request", "response.signature must be non-empty base64url")
        }
        var userHandle: [UInt8]?
        if let text = credential.response.userHandle, !text.isEmpty {
            guard let bytes = Base64URL.decodeBytes(text), bytes.count <= 64 else {
                throw Refusal(.badRequest, "bad_request", "response.userHandle must be base64url of at most 64 bytes")
            }
            userHandle = bytes
        }
        let id = Base64URL.encode(credentialID)
        let (ceremony, found) = try await take(clientDataJSON, kind: .authentication, passkey: id)
        return try await settling(ceremony, taken: false) {
            try await signIn(
                AssertionResponse(
                    credentialID: credentialID, clientDataJSON: clientDataJSON, authenticatorData: authenticatorData, signature: signature,
                    userHandle: userHandle),
                passkey: found, ceremony: ceremony)
        }
    }

    /// Verifies the assertion of an answered authentication ceremony against `found`, the passkey its credential ID
    /// names (nil when none does), and opens the session.
    private func signIn(_ assertion: AssertionResponse, passkey found: PasskeyRecord?, ceremony: PasskeyCeremony) async throws -> SignedIn {
        let credentialID = assertion.credentialID
        let id = Base64URL.encode(credentialID)
        // One answer for a credential that is unknown, removed, or another user's than the one named: which of them
        // it is would tell an anonymous caller who owns which credential.
        let notRegistered = "the credential is not registered for this relying party and user"
        // A sign-in narrowed to one passkey takes no other, not even another of hers.
        guard let passkey = found, ceremony.username == nil || ceremony.username == passkey.username,
            ceremony.credentialID == nil || ceremony.credentialID == id
        else {
            environment.decide(
                "passkey authentication", ceremony.username, 400,
                found != nil && ceremony.credentialID != nil && ceremony.username == found?.username
                    ? "refused: the sign-in was for passkey \(ceremony.credentialID!.prefix(10))…, answered with \(id.prefix(10))…"
                    : "refused: credential \(id.prefix(10))… is not registered\(ceremony.username == nil ? "" : " for this user")")
            // The Signal API: a credential nobody holds here is said to be unknown, so the page can have the user's
            // passkey provider hide it. Never one somebody holds (her passkey must not vanish because another
            // username was typed), and never a decoy of the username asked for: that would tell a decoy from a real
            // credential, which is what decoys hide.
            let decoy = ceremony.username.map { username in settings.decoys(for: username).contains { $0.id == id } } ?? false
            throw Refusal(.badRequest, found == nil && !decoy ? FIDO2API.ErrorCode.unknownCredential : "authentication_refused", notRegistered)
        }
        let verified: VerifiedAssertion
        var key: COSEKey?
        do {
            key = try COSEKey(bytes: passkey.publicKey)
            let stored = StoredCredential(
                id: credentialID, publicKey: key!, userHandle: Base64URL.decodeBytes(passkey.userHandle) ?? [],
                signCount: passkey.signCount, backupEligible: passkey.backupEligible)
            // With a username the credential was checked to be hers above: it is the one allowed credential, and a
            // missing user handle (a credential that is not discoverable) is fine. Without one, the user handle must
            // be there and be the passkey's (§7.2 step 6).
            verified = try AuthenticationCeremony(relyingParty: settings.relyingParty).verify(
                assertion,
                expected: AssertionExpectation(
                    challenge: Base64URL.decodeBytes(ceremony.challenge) ?? [],
                    allowCredentials: ceremony.username == nil ? [] : [credentialID],
                    userVerification: UserVerificationRequirement(rawValue: ceremony.userVerification) ?? .required),
                credential: stored)
        } catch {
            environment.decide("passkey authentication", passkey.username, 400, "refused: \(error)")
            // Only the key's holder hears why: an answer whose signature does not verify under the stored key gets the
            // answer an unknown credential gets, so a caller with a credential ID and a username cannot learn from the
            // reason whether the credential is that user's. The audit line keeps the reason.
            let holder =
                key?.isValidSignature(assertion.signature, for: assertion.authenticatorData + Array(SHA256.hash(data: assertion.clientDataJSON)))
                ?? false
            throw Refusal(.badRequest, "authentication_refused", holder ? "\(error)" : notRegistered)
        }
        let now = environment.clock()
        // The model's status now, not at registration: a model the Metadata Service reports revoked or its user keys
        // compromised since signs no one in (under every policy), as for UAF (1493). The stored AAGUID may be only
        // the client's word, which can refuse it but never admit it. Checked after the signature, so only the key's
        // holder learns it.
        if let aaguid = AAGUID.bytes(passkey.aaguid), aaguid != AAGUID.zero,
            let metadata = metadataSource.store.fido2Metadata(aaguid: aaguid),
            let report = StatusReport.authenticationRefusal(in: metadata.statusReports, at: now)
        {
            environment.decide(
                "passkey authentication", passkey.username, 400,
                "refused: the Metadata Service reports model \(passkey.aaguid) \(report.status) (passkey \(id.prefix(10))…)")
            throw Refusal(.badRequest, "authentication_refused", "the FIDO Metadata Service reports this authenticator model \(report.status)")
        }
        // The sign-in every protocol shares; nothing of it is stored until the store call below.
        let opened = try environment.signIn.open(username: passkey.username, credential: .passkey(credentialID: id), at: now)
        // Taken only if nothing answered, refused or cancelled the ceremony meanwhile; compare-and-set from the counter
        // verified against, and the session only if it moved: a concurrent sign-in that moved it first makes this
        // one a replay.
        let counterRefusal = "the signature counter did not increase"
        switch try await stores.ceremonies.completePasskeySignIn(
            id: id, from: passkey.signCount, to: verified.signCount, backupState: verified.backupState,
            at: now, sessionToken: opened.token, session: opened.session, challenge: ceremony.challenge, counterRefusal: counterRefusal)
        {
        case .completed: break
        case .requestGone:
            environment.decide(
                "passkey authentication", passkey.username, 400, "refused: the challenge was answered or cancelled during the sign-in")
            throw Self.unknownChallenge
        case .counterMoved:
            environment.decide("passkey authentication", passkey.username, 400, "refused: the counter of \(id.prefix(10))… moved during the sign-in")
            throw Refusal(.badRequest, "authentication_refused", counterRefusal)
        }
        environment.decide(
            "passkey authentication", passkey.username, 200,
            "\(verified.userVerified ? "user verified" : "user present") with passkey \(id.prefix(10))… (\(passkey.aaguid)), counter \(verified.signCount); session \(OrderedToken.label(opened.session.id)) opened"
        )
        var response = FIDO2API.ServerResponse(status: "ok", errorMessage: "", fido2SessionId: ceremony.sessionID)
        response.token = opened.jwt
        return SignedIn(response: response, jwt: opened.jwt, setCookie: opened.cookie)
    }

    // MARK: Shared

    /// Refuses (409) a user who holds ``ServerConfiguration/Limits/passkeysPerUser`` passkeys already: without a cap
    /// one user with a recent session could store passkeys without end, and every options request reads them all.
    private func refuseOverCap(_ username: String, holding count: Int, step: OperationName) throws {
        let limit = environment.limits.passkeysPerUser
        guard count >= limit else { return }
        environment.decide(step, username, 409, "refused: the user holds \(count) passkeys (at most \(limit))")
        throw Refusal(.conflict, "too_many_passkeys", "this user holds \(limit) passkeys, the most allowed: remove one before adding another")
    }

    private func newCeremony(
        _ kind: PasskeyCeremony.Kind, username: String?, userHandle: String?,
        userVerification: UserVerificationRequirement
    ) -> PasskeyCeremony {
        let now = environment.clock()
        return PasskeyCeremony(
            challenge: Base64URL.encode(SecureRandom.bytes(Self.challengeBytes)), sessionID: environment.newRequestID(),
            kind: kind, username: username, userHandle: userHandle, userVerification: userVerification.rawValue,
            expiresAt: now.addingTimeInterval(settings.timeout))
    }

    /// The ceremony whose challenge `clientDataJSON` carries: unknown, answered, expired or of the other kind are all
    /// refused, and the challenge is spent either way. A registration's is consumed at once; a sign-in's (with
    /// `passkey`) is only read, with the passkey of that credential ID (nil when none has it), in one statement on
    /// PostgreSQL (``CeremonyStore/pendingPasskeySignIn(challenge:credentialID:)``): the sign-in's completion takes it,
    /// or its refusal (``settling(_:taken:_:)``).
    private func take(
        _ clientDataJSON: [UInt8], kind: PasskeyCeremony.Kind,
        passkey id: String? = nil
    ) async throws -> (ceremony: PasskeyCeremony, passkey: PasskeyRecord?) {
        let operation: OperationName = kind == .registration ? "passkey registration" : "passkey authentication"
        guard let client = CollectedClientData(bytes: clientDataJSON), let challenge = Base64URL.decodeBytes(client.challenge),
            challenge.count == Self.challengeBytes
        else {
            throw Refusal(.badRequest, "bad_request", "clientDataJSON is not client data with a challenge this server issued")
        }
        // The canonical text (unpadded base64url) is the key, whatever form of the same bytes the client wrote.
        let key = Base64URL.encode(challenge)
        let taken: (ceremony: PasskeyCeremony, passkey: PasskeyRecord?)?
        if let id {
            taken = try await stores.ceremonies.pendingPasskeySignIn(challenge: key, credentialID: id)
        } else {
            taken = try await stores.passkeyCeremonies.consume(challenge: key).map { ($0, nil) }
        }
        guard let (ceremony, passkey) = taken else {
            environment.decide(operation, nil, 400, "refused: unknown or already answered challenge")
            throw Self.unknownChallenge
        }
        // A registration's answer (no passkey to read) consumed its ceremony; a sign-in's only read it.
        try await settling(ceremony, taken: id == nil) {
            guard ceremony.kind == kind else {
                environment.decide(operation, ceremony.username, 400, "refused: the challenge was issued for \(ceremony.kind.rawValue)")
                throw Refusal(.badRequest, "unknown_challenge", "the challenge was issued for \(ceremony.kind.rawValue)")
            }
            guard ceremony.expiresAt >= environment.clock() else {
                environment.decide(operation, ceremony.username, 400, "refused: the challenge expired")
                throw Self.unknownChallenge
            }
        }
        return (ceremony, passkey)
    }

    /// Runs `body` for the answered `ceremony`; what refuses it there becomes the ceremony's outcome for the status
    /// service, in the words its caller hears (a refusal's message, never a fault's details). A ceremony the answer
    /// consumed (`taken`, a registration) is finished; one it only read (a sign-in) is abandoned, which spends its
    /// challenge, unless another answer took it meanwhile.
    private func settling<T>(_ ceremony: PasskeyCeremony, taken: Bool, _ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch {
            let words: String
            switch error {
            case let refusal as Refusal: words = refusal.message
            case let failure as ServiceFailure: words = failure.detail
            default: words = "the server could not complete the ceremony"
            }
            // Best effort: if the database cannot take this either, a consumed ceremony stays answered and a read one
            // unanswered, which the status service reports as `initialized` until it expires and as `failed` after
            // (until then, a read one's challenge still takes one answer, which must verify); the caller's error is
            // what counts.
            let outcome = String(words.prefix(Self.maximumOutcomeCharacters))
            if taken {
                try? await stores.passkeyCeremonies.finish(challenge: ceremony.challenge, succeeded: false, outcome: outcome)
            } else {
                try? await stores.passkeyCeremonies.abandon(challenge: ceremony.challenge, outcome: outcome)
            }
            throw error
        }
    }

    // MARK: Status

    /// nevisFIDO's status service: how the ceremony of `sessionID` stands, for whoever holds its id (the options'
    /// caller, or the relying party it handed the id to). A ceremony nobody answered in time reads `failed`; one the
    /// server no longer keeps (the status retention past its expiry) or never issued reads `unknown`.
    package func status(_ request: FIDO2API.StatusQuery) async throws -> FIDO2API.StatusResponse {
        let sessionID = request.fido2SessionId
        guard (1...128).contains(sessionID.utf8.count) else {
            throw Refusal(.badRequest, "bad_request", "fido2SessionId must be 1...128 bytes")
        }
        guard let status = try await stores.passkeyCeremonies.status(sessionID: sessionID) else {
            return FIDO2API.StatusResponse(status: .unknown, fido2SessionId: sessionID)
        }
        var response = FIDO2API.StatusResponse(status: .initialized, fido2SessionId: sessionID)
        response.operation = status.kind.rawValue
        response.username = status.username
        switch status.state {
        case .succeeded: response.status = .succeeded
        case .failed:
            response.status = .failed
            response.errorMessage = status.outcome ?? "the ceremony failed"
        case .cancelled:
            response.status = .failed
            response.errorMessage = status.outcome ?? PasskeyCeremonyStore.cancelledOutcome
        case .initialized, .answered:
            if status.expiresAt < environment.clock() {
                response.status = .failed
                response.errorMessage = "nothing answered the ceremony before it expired"
            }
        }
        return response
    }

    /// The members both results share: `type`, `id` (and `rawId`, the same bytes) and `clientDataJSON`.
    private static func readCommon(_ credential: FIDO2API.Credential) throws -> (id: [UInt8], clientDataJSON: [UInt8]) {
        guard credential.type == "public-key" else { throw Refusal(.badRequest, "bad_request", "type must be public-key") }
        guard let id = Base64URL.decodeBytes(credential.id), !id.isEmpty, id.count <= 1023 else {
            throw Refusal(.badRequest, "bad_request", "id must be base64url of 1...1023 bytes")
        }
        if let rawId = credential.rawId, Base64URL.decodeBytes(rawId) != id { throw Refusal(.badRequest, "bad_request", "rawId is not id") }
        guard let clientDataJSON = Base64URL.decodeBytes(credential.response.clientDataJSON), !clientDataJSON.isEmpty else {
            throw Refusal(.badRequest, "bad_request", "response.clientDataJSON must be non-empty base64url")
        }
        return (id, clientDataJSON)
    }

    static func validate(name: String, member: String) throws {
        guard isValid(name: name) else { throw Refusal(.badRequest, "bad_request", "\(member) \(nameRule)") }
    }

    /// The rule of a display name and a passkey's name: 1…256 bytes without control characters.
    static func isValid(name: String) -> Bool { !name.isEmpty && name.utf8.count <= maximumNameBytes && !Text.hasControlCharacters(name) }
    static let nameRule = "must be 1...\(maximumNameBytes) bytes without control characters"

    static func isTransport(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count) && text.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || $0 == UInt8(ascii: "-") }
    }

    /// The request's extensions, echoed (the conformance tools check that), with `adding` set; at most
    /// ``maximumExtensions`` members and ``maximumExtensionBytes`` bytes, so an anonymous caller's echo stays small.
    /// `overriding` replaces what the request says: the relying party's policy (credential protection), not the caller's
    /// choice.
    static func echoed(
        _ extensions: [String: JSONValue]?, adding: [String: JSONValue], overriding: [String: JSONValue] = [:]
    ) throws -> [String: JSONValue]? {
        guard (extensions?.count ?? 0) <= maximumExtensions else {
            throw Refusal(.badRequest, "bad_request", "at most \(maximumExtensions) extensions")
        }
        if let extensions, !extensions.isEmpty, try WireJSONEncoder().encode(extensions).count > maximumExtensionBytes {
            throw Refusal(.badRequest, "bad_request", "extensions must be at most \(maximumExtensionBytes) bytes of JSON")
        }
        let merged = (extensions ?? [:]).merging(adding) { first, _ in first }.merging(overriding) { _, policy in policy }
        return merged.isEmpty ? nil : merged
    }

    /// `credProps.rk` of the client's extension results (WebAuthn §10.1.3): whether the passkey is discoverable.
    static func residentKey(_ results: FIDO2API.ClientExtensionResults?) -> Bool? { results?.credProps?.rk }
}
