import Primitives
import Foundation
import UAF

extension OperationRunner {
    /// In-band registration (ARCHITECTURE.md, "Data flow of an in-band registration").
    func register(username: Username, server: Server, deviceInformation: DeviceInformation?, options: RegistrationOptions) async throws(OperationError) {
        try core.checkIntegrity()
        let data = core.mirror.snapshot
        if data.accounts.contains(where: { $0.username == username && $0.server != server }) {
            throw .UserAlreadyRegisteredInAnotherServer(cause: nil)
        }
        // Seed 003: the device information is created by the first registration, so that one must bring it.
        if data.deviceInformation == nil && deviceInformation == nil {
            throw .Unknown(cause: SDKMessage("the first registration needs deviceInformation(_:) (a DeviceInformation with the device's name)"))
        }
        // Step 2. Ask the server for a RegistrationRequest.
        let context: String
        do { context = try UAFMessageCodec.encodeObject(["username": username]) } catch { throw .Unknown(cause: error) }
        let message = try await fetchUAFRequest(server: server, path: core.configuration.registrationRequestPath, op: .registration, context: context)
        let request = try decodeRequest(RegistrationRequest.self, from: message, header: \.header)
        guard request.username == username else {
            throw .FidoError(errorCode: .protocolError, cause: SDKMessage("the request is for another username"))
        }
        // Step 3. AppID / FacetID, policy, selection, user verification, key generation, KRD, attestation.
        let appID = try await checkAppID(request.header.appID)
        var schemes: [String: SigningScheme] = [:]
        for module in core.modules {
            let descriptor = module.descriptor
            // One authenticator of each type per user: a registered one is not offered again.
            if data.registrations.contains(where: { $0.username == username && $0.server == server && AAID.equal($0.aaid, descriptor.aaid) }) { continue }
            guard module.isSupportedByHardware(core.platform, options: options) else { continue }
            let keyIDs = Set(data.registrations.filter { AAID.equal($0.aaid, descriptor.aaid) }.map(\.keyID))
            // One assertion is sent, so an authenticator qualifies only if it satisfies an accepted combination alone.
            if let scheme = descriptor.scheme(satisfying: request.policy, keyIDs: keyIDs) { schemes[AAID.normalized(descriptor.aaid)] = scheme }
        }
        guard !schemes.isEmpty else { throw .FidoError(errorCode: .noSuitableAuthenticator, cause: nil) }
        let chosen = try await selectAuthenticator(account: AccountRecord(username: username, server: server), compliant: Set(schemes.keys),
                                                   data: data, transaction: nil, mustShow: false)
        guard let module = core.module(chosen), let scheme = schemes[AAID.normalized(chosen)] else {
            let registered = data.registrations.contains { $0.username == username && AAID.equal($0.aaid, chosen) }
            throw .FidoError(errorCode: .noSuitableAuthenticator,
                             cause: SDKMessage(registered ? "\(username) already has a \(chosen) authenticator on this device" : "\(chosen) does not satisfy the server's policy"))
        }
        let descriptor = module.descriptor
        var enrollment = try await module.enroll(username: username, options: options, session: session)
        try core.checkIntegrity()

        let fcParams = try finalChallenge(appID: appID, challenge: request.challenge)
        let registrationCounter = (data.registrationCounters[descriptor.aaid] ?? 0) + 1
        let credential: NewCredential
        do {
            credential = try await module.register(fcParams: fcParams, scheme: scheme, registrationCounter: registrationCounter,
                                                   enrollment: enrollment, keyStore: core.keyStore)
        } catch { throw .Unknown(cause: error) }
        do { try enrollment.changes.set(credential.key.stored, credential.key.entry) } catch {
            credential.key.discard()
            throw .Unknown(cause: error)
        }
        var header = request.header
        header.appID = appID
        let response = RegistrationResponse(header: header, fcParams: fcParams,
                                            assertions: [AuthenticatorRegistrationAssertion(assertion: Base64URL.encode(credential.assertion))])
        // Nothing is stored before the server accepted: a failed registration leaves no trace on the device.
        do { _ = try await sendUAFResponse(server: server, path: core.configuration.registrationResponsePath, response: response) } catch {
            credential.key.discard()
            throw error
        }

        // Step 5. One commit: key, verifier, registration, account and device information together.
        let registration = LocalRegistration(username: username, server: server, aaid: descriptor.aaid, keyID: Base64URL.encode(credential.keyID),
                                             keyAlias: credential.key.alias, signCounter: 0, signatureAlgorithm: scheme.algorithm,
                                             options: options, createdAt: core.platform.now())
        let account = AccountRecord(username: username, server: server)
        do {
            try await core.commit(enrollment.changes) { data in
                if !data.accounts.contains(account) { data.accounts.append(account) }
                data.registrations.append(registration)
                data.registrationCounters[descriptor.aaid] = registrationCounter
                data.deviceInformation = DeviceInformation.adding(username, to: data.deviceInformation ?? deviceInformation)
            }
        } catch {
            // The server has the registration but the device could not record it: the hardware key is of no use.
            credential.key.discard()
            throw .Unknown(cause: error)
        }
    }
}

extension DeviceInformation {
    /// The device information with `username` in its pairs (one pair per user; a given one replaces nothing).
    static func adding(_ username: Username, to information: DeviceInformation?) -> DeviceInformation? {
        guard let information else { return nil }
        if information.idUsernamePairs.contains(where: { $0.username == username }) { return information }
        return DeviceInformation(name: information.name, fcmRegistrationToken: information.fcmRegistrationToken, deviceId: information.deviceId,
                                 idUsernamePairs: information.idUsernamePairs + [IdUsernamePair(identifier: information.deviceId, username: username)])
    }
}
