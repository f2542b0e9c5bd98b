import Foundation
import NevisProtocol
import Primitives
import UAF

extension OperationRunner {
    /// Where a registration's UAF request comes from: asked for in-band for a username, or already redeemed from an
    /// out-of-band token (the request then names the user).
    package enum RegistrationSource: Sendable {
        case inBand(Username)
        case redeemed(message: String)
    }

    /// Registration (ARCHITECTURE.md, "Data flow of an in-band registration"), in-band or from a redeemed token.
    package func register(
        _ source: RegistrationSource, server: Server, deviceInformation: DeviceInformation?, options: RegistrationOptions
    ) async throws(OperationError) {
        if options.allowDevicePasscodeAsFallback && options.invalidateOnNewOsBiometrics {
            // Both options cannot be enabled (sdk-api (a) 32); this is reported only if the app turned the fallback on.
            throw .Unknown(cause: SDKMessage("allowDevicePasscodeAsFallback and invalidateOnNewOsBiometrics cannot both be enabled"))
        }
        try core.checkIntegrity()
        let data = core.mirror.snapshot
        if case .inBand(let username) = source, data.accounts.contains(where: { $0.username == username && $0.server != server }) {
            throw .UserAlreadyRegisteredInAnotherServer(cause: nil)
        }
        // Seed 003: the device information is created by the first registration, so that one must bring it.
        if data.deviceInformation == nil && deviceInformation == nil {
            throw .Unknown(cause: SDKMessage("the first registration needs deviceInformation(_:) (a DeviceInformation with the device's name)"))
        }
        // Step 2. Ask the server for a RegistrationRequest (or take the one the redeemed token answered).
        let message: String
        switch source {
        case .inBand(let username):
            let context: String
            do { context = try UAFMessageCodec.encodeObject(["username": username]) } catch { throw .Unknown(cause: error) }
            message = try await fetchUAFRequest(server: server, path: core.configuration.registrationRequestPath, op: .registration, context: context)
        case .redeemed(let redeemed):
            message = redeemed
        }
        let request = try decodeRequest(RegistrationRequest.self, from: message, header: \.header)
        let username = request.username
        if case .inBand(let asked) = source, asked != username {
            throw .FidoError(errorCode: .protocolError, cause: SDKMessage("the request is for another username"))
        }
        guard !username.isEmpty else { throw .FidoError(errorCode: .protocolError, cause: SDKMessage("the request names no user")) }
        if data.accounts.contains(where: { $0.username == username && $0.server != server }) {
            throw .UserAlreadyRegisteredInAnotherServer(cause: nil)
        }
        // A failure on the device from here on (a decline, no fitting authenticator, a refused PIN) is reported to
        // the server, which ends the operation at once.
        let (response, credential, descriptor, scheme, registrationCounter, signedEnrollment, appAttestation) = try await reportingFailure(
            header: request.header, challenge: request.challenge, server: server, path: core.configuration.registrationResponsePath,
            emptyResponse: { RegistrationResponse(header: $0, fcParams: $1, assertions: []) }
        ) { () async throws(OperationError) in
            // Step 3. AppID / FacetID, policy, selection, user verification, key generation, KRD, attestation.
            let appID = try await checkAppID(request.header.appID)
            var schemes: [String: SigningScheme] = [:]
            for module in core.modules {
                let descriptor = module.descriptor
                // One authenticator of each type per user: a registered one is not offered again.
                if data.registrations.contains(where: { $0.username == username && $0.server == server && AAID.equal($0.aaid, descriptor.aaid) }) {
                    continue
                }
                guard module.isSupportedByHardware(core.platform, options: options) else { continue }
                let keyIDs = Set(data.registrations.filter { AAID.equal($0.aaid, descriptor.aaid) }.map(\.keyID))
                // One assertion is sent, so an authenticator qualifies only if it satisfies an accepted combination alone.
                if let scheme = descriptor.scheme(satisfying: request.policy, keyIDs: keyIDs) { schemes[AAID.normalized(descriptor.aaid)] = scheme }
            }
            guard !schemes.isEmpty else { throw .FidoError(errorCode: .noSuitableAuthenticator, cause: nil) }
            let chosen = try await selectAuthenticator(
                account: AccountRecord(username: username, server: server), compliant: Set(schemes.keys),
                data: data, transaction: nil, mustShow: false)
            guard let module = core.module(chosen), let scheme = schemes[AAID.normalized(chosen)] else {
                let registered = data.registrations.contains { $0.username == username && AAID.equal($0.aaid, chosen) }
                throw .FidoError(
                    errorCode: .noSuitableAuthenticator,
                    cause: SDKMessage(
                        registered
                            ? "\(username) already has a \(chosen) authenticator on this device" : "\(chosen) does not satisfy the server's policy"))
            }
            let descriptor = module.descriptor
            var enrollment = try await module.enroll(username: username, options: options, session: session)
            try core.checkIntegrity()

            let fcParams = try finalChallenge(appID: appID, challenge: request.challenge)
            let registrationCounter = (data.registrationCounters[descriptor.aaid] ?? 0) + 1
            let credential: NewCredential
            do {
                credential = try await module.register(
                    fcParams: fcParams, scheme: scheme, registrationCounter: registrationCounter,
                    enrollment: enrollment, keyStore: core.keyStore)
            } catch { throw .Unknown(cause: error) }
            do { try enrollment.changes.set(credential.key.stored, credential.key.entry) } catch {
                credential.key.discard()
                throw .Unknown(cause: error)
            }
            var header = request.header
            header.appID = appID
            // Names this device, so the server's Device Service can list the credentials it holds (our contract,
            // DeviceServiceWire.deviceIDExtension); a server that does not know the extension ignores it.
            if let deviceId = (data.deviceInformation ?? deviceInformation)?.deviceId {
                header.exts =
                    (header.exts ?? []).filter { $0.id != DeviceServiceWire.deviceIDExtension }
                    + [Extension(id: DeviceServiceWire.deviceIDExtension, data: deviceId, failIfUnknown: false)]
            }
            // The app's attestation, when the server's policy asks for it (NevisProtocol's AppAttestationWire).
            let appAttestation: AppAttestationAnswer?
            do throws(OperationError) {
                appAttestation = try await self.appAttestation(asked: request.header, fcParams: fcParams, server: server)
            } catch {
                credential.key.discard()
                throw error
            }
            header.exts = Self.extensions(header.exts, answering: appAttestation)
            let response = RegistrationResponse(
                header: header, fcParams: fcParams,
                assertions: [AuthenticatorRegistrationAssertion(assertion: Base64URL.encode(credential.assertion))])
            return (response, credential, descriptor, scheme, registrationCounter, enrollment, appAttestation)
        }
        var enrollment = signedEnrollment
        // Nothing is stored before the server accepted: a failed registration leaves no trace on the device.
        let answer: ServerResponse
        do { answer = try await sendUAFResponse(server: server, path: core.configuration.registrationResponsePath, response: response) } catch {
            credential.key.discard()
            if case .AppAttestationError = error { await appAttestationSettled(appAttestation, server: server, accepted: false) }
            throw error
        }
        await appAttestationSettled(appAttestation, server: server, accepted: true)
        // The first registration makes the device information's key pairs; they are committed with it.
        if data.deviceInformation == nil {
            do { try enrollment.changes.set(DeviceKeys.generate(), DeviceKeys.entry) } catch {
                credential.key.discard()
                throw .Unknown(cause: error)
            }
        }

        // Step 5. One commit: key, verifier, registration, account and device information together.
        let registration = LocalRegistration(
            username: username, server: server, aaid: descriptor.aaid, keyID: Base64URL.encode(credential.keyID),
            keyAlias: credential.key.alias, signCounter: 0, signatureAlgorithm: scheme.algorithm,
            options: options, createdAt: core.platform.now())
        let account = AccountRecord(username: username, server: server)
        do {
            try await core.commit(enrollment.changes) { data in
                if !data.accounts.contains(account) { data.accounts.append(account) }
                data.registrations.append(registration)
                data.registrationCounters[descriptor.aaid] = registrationCounter
                if data.deviceInformation == nil { data.deviceInformation = deviceInformation }
            }
        } catch {
            // The server has the registration but the device could not record it: the hardware key is of no use.
            credential.key.discard()
            throw .Unknown(cause: error)
        }
        // Step 6 of server-api §D.1: the device's dispatch target on this server, for this user.
        _ = await createDispatchTarget(username: username, server: server, authorizedBy: answer)
    }
}
