import Foundation
import XCTest

@testable import SecureStorage

/// Tests that run real child processes: the test binary re-executes itself with one of the child entry points
/// below selected by a filter argument and driven by environment variables.
final class MultiProcessTests: XCTestCase {
    private static let modeVariable = "MAUTH_STORAGE_CHILD_MODE"
    private static var childMode: String? { ProcessInfo.processInfo.environment[modeVariable] }

    private func spawnChild(_ test: String, environment: [String: String], output: Pipe? = nil) throws -> Process {
        #if os(Linux)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["SecureStorageTests.MultiProcessTests/\(test)"]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = output ?? FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
        #else
        throw XCTSkip("child processes are spawned from the test binary on Linux only")
        #endif
    }

    // MARK: Child entry points (skipped unless started as a child)

    func testChildConcurrentWriter() throws {
        guard Self.childMode == "concurrent" else { throw XCTSkip("child entry point") }
        let env = ProcessInfo.processInfo.environment
        let location = StoreLocation(directory: URL(fileURLWithPath: env["MAUTH_STORAGE_DIR"]!), name: "shared")
        let prefix = env["MAUTH_STORAGE_PREFIX"]!
        let engine = try StoreEngine.open(location: location, fingerprint: [9], protector: testProtector)
        for i in 0..<100 {
            try engine.set(Array("\(prefix)-\(i)".utf8), for: "\(prefix)-\(i)")
            try engine.write()
        }
    }

    func testChildKilledWriter() throws {
        guard Self.childMode == "kill" else { throw XCTSkip("child entry point") }
        let env = ProcessInfo.processInfo.environment
        let location = StoreLocation(directory: URL(fileURLWithPath: env["MAUTH_STORAGE_DIR"]!), name: "victim")
        let engine = try StoreEngine.open(location: location, fingerprint: [9], protector: testProtector)
        FileHandle.standardOutput.write(Data("started\n".utf8))
        let start = Int(String(bytes: try engine.get("counter") ?? Array("0".utf8), encoding: .utf8)!)!
        for i in (start + 1)...(start + 200) {
            // Two keys that must always move together, plus a growing payload so commits take varying time.
            try engine.set(Array("\(i)".utf8), for: "counter")
            try engine.set(Array("\(i)".utf8), for: "mirror")
            try engine.set([UInt8](repeating: UInt8(i % 251), count: 100 * (i % 50)), for: "payload-\(i % 10)")
            try engine.write()
        }
    }

    // MARK: Parent tests

    func testTwoProcessesWritingConcurrentlyLoseNothing() throws {
        if Self.childMode != nil { throw XCTSkip("running as a child") }
        let location = try temporaryLocation(name: "shared")
        _ = try StoreEngine.create(location: location, fingerprint: [9], protector: testProtector)
        let children = try ["left", "right"].map {
            try spawnChild(
                "testChildConcurrentWriter",
                environment: [
                    Self.modeVariable: "concurrent", "MAUTH_STORAGE_DIR": location.directory.path, "MAUTH_STORAGE_PREFIX": $0,
                ])
        }
        for child in children {
            child.waitUntilExit()
            XCTAssertEqual(child.terminationStatus, 0)
        }
        let engine = try StoreEngine.open(location: location, fingerprint: [9], protector: testProtector)
        XCTAssertEqual(try engine.count(), 200, "every write of both processes must survive")
        for prefix in ["left", "right"] {
            for i in 0..<100 {
                XCTAssertEqual(try engine.get("\(prefix)-\(i)"), Array("\(prefix)-\(i)".utf8))
            }
        }
    }

    func testAProcessKilledDuringWritesAlwaysLeavesTheOldOrTheNewContent() throws {
        if Self.childMode != nil { throw XCTSkip("running as a child") }
        let location = try temporaryLocation(name: "victim")
        let engine = try StoreEngine.create(location: location, fingerprint: [9], protector: testProtector)
        try engine.set(Array("0".utf8), for: "counter")
        try engine.set(Array("0".utf8), for: "mirror")
        try engine.write()
        var lastCounter = 0
        var killedMidway = 0
        for round in 0..<12 {
            let pipe = Pipe()
            let child = try spawnChild(
                "testChildKilledWriter",
                environment: [
                    Self.modeVariable: "kill", "MAUTH_STORAGE_DIR": location.directory.path,
                ], output: pipe)
            // Wait until the child has opened the store, then kill it at a random moment of its 200 writes.
            var seen = Data()
            while !(String(data: seen, encoding: .utf8) ?? "").contains("started") {
                let chunk = pipe.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                seen.append(chunk)
            }
            usleep(useconds_t.random(in: 0...60_000) + useconds_t(round * 1_000))
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            if child.terminationReason == .uncaughtSignal { killedMidway += 1 }

            let reopened = try StoreEngine.open(location: location, fingerprint: [9], protector: testProtector)
            let counter = Int(String(bytes: try XCTUnwrap(reopened.get("counter")), encoding: .utf8)!)!
            let mirror = Int(String(bytes: try XCTUnwrap(reopened.get("mirror")), encoding: .utf8)!)!
            XCTAssertEqual(counter, mirror, "a commit is all or nothing")
            XCTAssertGreaterThanOrEqual(counter, lastCounter, "committed writes are never lost")
            XCTAssertLessThanOrEqual(counter, lastCounter + 200)
            _ = try reopened.all()  // every entry still authenticates
            lastCounter = counter
        }
        XCTAssertGreaterThan(killedMidway, 0)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: location.directory.path).filter { $0.contains(".tmp-") }
        XCTAssertEqual(leftovers, [], "temporary files of killed writers are cleaned up on open")
    }
}
