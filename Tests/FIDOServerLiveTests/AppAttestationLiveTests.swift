import AppAttestation
import FIDOServerTesting
import FIDOSimulation
import Foundation
import NevisProtocol
import Primitives
import UAF
import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// App attestation required, over HTTPS, on a SQLite file and on PostgreSQL: a registration attests the app, each
/// login asserts, and on PostgreSQL an assertion counted by one instance is refused by another.
final class AppAttestationLiveTests: XCTestCase {
    let authority = try! SoftwareAppAttestAuthority()
    let appID = "ABCDE12345.ch.nevis.mauth.virtualdevice"
    let suffix = String(UUID().uuidString.prefix(8))

    func configuration(_ database: ServerConfiguration.Database) throws -> ServerConfiguration {
        var configuration = LoopbackServer.configuration(database: database)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("app-attest-root-\(UUID().uuidString).pem")
        try authority.rootPEM.write(to: root, atomically: true, encoding: .utf8)
        addTeardownBlock { try? FileManager.default.removeItem(at: root) }
        configuration.appAttestation = .init(
            apple: .init(
                apps: [.init(teamId: "ABCDE12345", bundleId: "ch.nevis.mauth.virtualdevice")], environments: ["development"],
                rootCertificatesPath: root.path))
        configuration.policies = ["default": .init(appAttestation: .init(registration: .require, authentication: .require))]
        return configuration
    }

    /// Registers `username` attesting the app, then signs in twice asserting; returns the authenticator and the app.
    func registerAndSignIn(_ server: LoopbackServer, username: String) async throws -> (SoftwareAuthenticator, SoftwareAppAttestation) {
        var app = SoftwareAppAttestation(authority: authority, appID: appID)
        var authenticator = SoftwareAuthenticator()
        let request = try await server.registrationRequest(username: username)
        XCTAssertEqual(AppAttestationWire.asked(in: request.header), "require")
        var registration = try authenticator.register(request, serverAppID: server.server.appID)
        registration.header.exts = [try app.answer(fcParams: registration.fcParams, now: server.clock.now)]
        let registered = try await server.send("/nevisfido/uaf/1.1/registration", registration)
        XCTAssertEqual(registered.statusCode, 1200)
        for _ in 1...2 {
            let (_, login) = try await server.authenticationRequest(username: username)
            var response = try authenticator.authenticate(try XCTUnwrap(login), serverAppID: server.server.appID)
            response.header.exts = [try app.answer(fcParams: response.fcParams, now: server.clock.now)]
            let signedIn = try await server.send("/nevisfido/uaf/1.1/authentication", response)
            XCTAssertEqual(signedIn.statusCode, 1200)
        }
        let stored = try await server.server.stores.appAttestKeys.key(id: app.key.keyID)
        XCTAssertEqual(stored?.counter, 2)
        return (authenticator, app)
    }

    func testAppAttestationRequiredWorksOverTLSOnASQLiteFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("app-attest-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try await LoopbackServer(configuration: try configuration(.sqlite(path: directory.appendingPathComponent("mauth.sqlite").path)))
        do {
            var (authenticator, _) = try await registerAndSignIn(server, username: "alice")
            let (_, login) = try await server.authenticationRequest(username: "alice")
            let unattested = try authenticator.authenticate(try XCTUnwrap(login), serverAppID: server.server.appID)
            let refused = try await server.send("/nevisfido/uaf/1.1/authentication", unattested)
            XCTAssertEqual(refused.statusCode, 1497)
        } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }

    func testAnAssertionCountedByOneInstanceIsRefusedByAnotherOnPostgreSQL() async throws {
        let url = try PostgresStoreTests.postgresURL()
        let first = try await LoopbackServer(configuration: try configuration(.postgres(url: url, poolSize: 4)))
        let second = try await LoopbackServer(configuration: try configuration(.postgres(url: url, poolSize: 4)))
        do {
            var (authenticator, app) = try await registerAndSignIn(first, username: "ann-\(suffix)")
            // The next assertion, counted on the first instance...
            let (_, login) = try await first.authenticationRequest(username: "ann-\(suffix)")
            var response = try authenticator.authenticate(try XCTUnwrap(login), serverAppID: first.server.appID)
            let counted = try app.answer(fcParams: response.fcParams, now: first.clock.now)
            response.header.exts = [counted]
            let accepted = try await first.send("/nevisfido/uaf/1.1/authentication", response)
            XCTAssertEqual(accepted.statusCode, 1200)
            // ...and its counter again, with a fresh request on the second: refused, whichever instance answers.
            let key = app.key
            let (_, again) = try await second.authenticationRequest(username: "ann-\(suffix)")
            var replay = try authenticator.authenticate(try XCTUnwrap(again), serverAppID: second.server.appID)
            let assertion = try key.assertion(
                appID: appID, counter: app.counter, clientDataHash: AppAttestationWire.clientDataHash(fcParams: replay.fcParams))
            replay.header.exts = [
                try AppAttestationWire.Answer(platform: "apple", keyId: Base64URL.encode(key.keyID), assertion: Base64URL.encode(assertion))
                    .headerExtension()
            ]
            let refused = try await second.send("/nevisfido/uaf/1.1/authentication", replay)
            XCTAssertEqual(refused.statusCode, 1497)
        } catch {
            try? await first.shutdown()
            try? await second.shutdown()
            throw error
        }
        try await first.shutdown()
        try await second.shutdown()
    }
}
