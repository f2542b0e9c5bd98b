import Crypto
import Foundation
import UAF

/// The in-band registration spine (ARCHITECTURE.md, "Data flow of an in-band registration").
struct RegistrationFlow {
    let core: ClientCore
    let username: Username
    let server: Server
    let headers: [(String, String)]
    let deviceInformation: DeviceInformation?
    let selector: (any AuthenticatorSelector)?
    let pinEnroller: (any PinEnroller)?

    func run() async throws(OperationError) {
        try core.checkIntegrity()
        let data = core.mirror.snapshot
        if data.accounts.contains(where: { $0.username == username && $0.server != server }) {
            throw .UserAlreadyRegisteredInAnotherServer(cause: nil)
        }
        // Step 2. Ask the server for a RegistrationRequest.
        let context: String
        do { context = try UAFMessageCodec.encodeObject(["username": username]) } catch { throw .Unknown(cause: error) }
        let message = try await core.fetchUAFRequest(path: core.configuration.registrationRequestPath, op: .registration,
                                                     context: context, headers: headers)
        guard let requests = try? UAFMessageCodec.decode(RegistrationRequest.self, from: message) else {
            throw .FidoError(errorCode: .protocolError, cause: SDKMessage("the server's RegistrationRequest cannot be decoded"))
        }
        guard let request = requests.first(where: { $0.header.upv == .uaf11 }) else {
            throw .FidoError(errorCode: .unsupportedVersion, cause: nil)
        }
        guard request.username == username else {
            throw .FidoError(errorCode: .protocolError, cause: SDKMessage("the request is for another username"))
        }
        // Step 3. AppID / FacetID, policy, selection, user enrollment, key generation, KRD, attestation.
        let appID = try await core.checkAppID(request.header.appID)
        let available = core.descriptors.map { descriptor -> AuthenticatorCapabilities in
            var capabilities = descriptor.capabilities
            capabilities.keyIDs = Set(data.registrations.filter { AAID.normalized($0.aaid) == AAID.normalized(descriptor.aaid) }.map(\.keyID))
            return capabilities
        }
        // One assertion is sent, so an authenticator qualifies only if it satisfies an accepted combination alone.
        let compliant = Set(available.filter { PolicyMatcher.isSatisfied(request.policy, by: [$0]) }.map { AAID.normalized($0.aaid) })
        guard !compliant.isEmpty else { throw .FidoError(errorCode: .noSuitableAuthenticator, cause: nil) }
        let aaid = try await selectAuthenticator(compliant: compliant, data: data)
        guard let descriptor = core.descriptor(aaid), compliant.contains(AAID.normalized(aaid)) else {
            throw .FidoError(errorCode: .noSuitableAuthenticator, cause: SDKMessage("\(aaid) does not satisfy the server's policy"))
        }
        let pin = try await enrollPin()
        let pinRecord: PinRecord
        do {
            let salt = ClientCore.randomBytes(16)
            pinRecord = PinRecord(salt: salt, hash: try PinVerifierStore.hash(pin, salt: salt, cost: PinVerifierStore.hashCost),
                                  cost: PinVerifierStore.hashCost, failures: 0, lastFailure: nil)
        } catch { throw .Unknown(cause: error) }

        let fcParams = try core.finalChallenge(appID: appID, challenge: request.challenge)
        let keyID = ClientCore.randomBytes(32)
        let alias = "\(descriptor.aaid)/\(Base64URL.encode(keyID))"
        let registrationCounter = (data.registrationCounters[descriptor.aaid] ?? 0) + 1
        let assertion: [UInt8]
        do {
            let publicKey = try await core.keyStore.generateKey(alias: alias)
            let krd = KeyRegistrationData(
                aaid: descriptor.aaid, authenticatorVersion: 1, signatureAlgorithm: descriptor.signatureAlgorithm,
                publicKeyEncoding: descriptor.publicKeyEncoding, finalChallengeHash: FinalChallengeParams.hash(fcParams: fcParams),
                keyID: keyID, signCounter: 0, registrationCounter: registrationCounter,
                publicKey: SignatureSuite.encode(publicKey, as: descriptor.publicKeyEncoding))
            // Surrogate basic attestation: the new key signs its own KRD.
            let signed = try krd.encoded()
            let signature = try await core.keyStore.sign(alias: alias, message: signed)
            assertion = try RegistrationAssertion.encode(
                signedKRD: signed, attestation: .basicSurrogate(signature: SignatureSuite.encode(signature, as: descriptor.signatureAlgorithm)))
        } catch {
            try? await core.keyStore.deleteKey(alias: alias)
            throw .Unknown(cause: error)
        }
        var header = request.header
        header.appID = appID
        let response = RegistrationResponse(header: header, fcParams: fcParams,
                                            assertions: [AuthenticatorRegistrationAssertion(assertion: Base64URL.encode(assertion))])
        do {
            _ = try await core.sendUAFResponse(path: core.configuration.registrationResponsePath, response: response, headers: headers)
        } catch {
            // Nothing of a failed registration stays on the device.
            try? await core.keyStore.deleteKey(alias: alias)
            throw error
        }
        // Step 5. Record the account, the registration, the PIN verifier and the device information.
        let registration = LocalRegistration(username: username, server: server, aaid: descriptor.aaid, keyID: Base64URL.encode(keyID),
                                             keyAlias: alias, signCounter: 0, createdAt: core.platform.now())
        let account = AccountRecord(username: username, server: server)
        let device = deviceInformation
        let user = self.username
        do {
            try await core.state.setSecret(pinRecord, PinVerifierStore.entry(user))
            try await core.updateState { data in
                if !data.accounts.contains(account) { data.accounts.append(account) }
                data.registrations.append(registration)
                data.registrationCounters[descriptor.aaid] = registrationCounter
                if data.deviceInformation == nil {
                    let base = device ?? DeviceInformation(name: "mauth device")
                    data.deviceInformation = DeviceInformation(
                        name: base.name, fcmRegistrationToken: base.fcmRegistrationToken, deviceId: base.deviceId,
                        idUsernamePairs: [IdUsernamePair(identifier: base.deviceId, username: user)])
                } else if let info = data.deviceInformation, !info.idUsernamePairs.contains(where: { $0.username == user }) {
                    data.deviceInformation = DeviceInformation(
                        name: info.name, fcmRegistrationToken: info.fcmRegistrationToken, deviceId: info.deviceId,
                        idUsernamePairs: info.idUsernamePairs + [IdUsernamePair(identifier: info.deviceId, username: user)])
                }
            }
        } catch {
            throw .Unknown(cause: error)
        }
    }

    private func selectAuthenticator(compliant: Set<String>, data: LocalStateData) async throws(OperationError) -> String {
        guard let selector else {
            // Without a selector the only compliant authenticator is taken, if there is exactly one.
            guard compliant.count == 1, let only = compliant.first else {
                throw .Unknown(cause: SDKMessage("several authenticators are possible: set an authenticatorSelector"))
            }
            return only
        }
        let context = SelectionContextValue(account: AccountRecord(username: username, server: server),
                                            authenticators: core.authenticators(in: data), transactionConfirmationData: nil, compliant: compliant)
        return try await core.interact { (gate: InteractionGate<String>) in
            selector.selectAuthenticator(context: context, handler: SelectionHandlerValue(gate: gate))
        }
    }

    /// Asks the enroller until it gives a PIN that satisfies its policy (a bad one is a recoverable error).
    private func enrollPin() async throws(OperationError) -> String {
        guard let pinEnroller else { throw .Unknown(cause: SDKMessage("the PIN authenticator needs a pinEnroller")) }
        let policy = pinEnroller.pinPolicy()
        var lastError: PinEnrollmentError?
        while true {
            let context = PinEnrollmentContextValue(username: username, lastRecoverableError: lastError)
            let pin = try await core.interact { (gate: InteractionGate<String>) in
                pinEnroller.enrollPin(context: context, handler: PinEnrollmentHandlerValue(gate: gate))
            }
            if let violation = policy.violation(pin) {
                lastError = .InvalidPinFormat(message: violation)
                continue
            }
            return pin
        }
    }
}
