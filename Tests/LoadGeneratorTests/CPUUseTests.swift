import XCTest

@testable import LoadGenerator

/// The procfs parsers behind `CPU per flow`, on real lines of proc(5)'s format, each rejection by one changed field.
final class CPUUseTests: XCTestCase {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime …
    let process = "4242 (mauth) S 1 4242 4242 0 -1 4194560 5120 0 3 0 1500 250 0 0 20 0 4 0 123456 987654321 15000"

    func testProcessTicksAreUserPlusSystemTime() {
        XCTAssertEqual(ProcFS.processTicks(process), 1750)
    }

    func testACommandNameWithSpacesAndParenthesesDoesNotShiftTheFields() {
        let odd = process.replacingOccurrences(of: "(mauth)", with: "(mauth) S (x y))")
        XCTAssertEqual(ProcFS.processTicks(odd), 1750)
    }

    func testAProcessLineWithoutTheCommandIsRefused() {
        XCTAssertNil(ProcFS.processTicks(process.replacingOccurrences(of: "(mauth)", with: "mauth")))
    }

    func testATruncatedProcessLineIsRefused() {
        XCTAssertNil(ProcFS.processTicks("4242 (mauth) S 1 4242 4242 0 -1 4194560 5120 0 3 0 1500"))
    }

    func testANonNumericTimeIsRefused() {
        XCTAssertNil(ProcFS.processTicks(process.replacingOccurrences(of: " 1500 ", with: " x ")))
    }

    let machine = "cpu  1000 20 300 5000 80 7 13 0 0 0\ncpu0 500 10 150 2500 40 3 7 0 0 0\ncpu1 500 10 150 2500 40 4 6 0 0 0\nintr 12345\n"

    func testMachineTicksCountIdleAndIOWaitAsNotBusy() {
        let ticks = ProcFS.machineTicks(machine)
        XCTAssertEqual(ticks?.busy, 1000 + 20 + 300 + 7 + 13)
        XCTAssertEqual(ticks?.total, 1000 + 20 + 300 + 5000 + 80 + 7 + 13)
        XCTAssertEqual(ticks?.cores, 2, "the per-core lines, not the all-cores one")
    }

    func testAMachineWithoutTheAllCoresLineIsRefused() {
        XCTAssertNil(ProcFS.machineTicks(machine.replacingOccurrences(of: "cpu  ", with: "cpuX ")))
    }

    func testAMachineLineWithANonNumericFieldIsRefused() {
        XCTAssertNil(ProcFS.machineTicks(machine.replacingOccurrences(of: "cpu  1000 20", with: "cpu  1000 x")))
    }

    func testUseIsPerFlowAndPerSecond() {
        let watch = CPUWatch(serverPIDs: [7, 8], embeddedServers: false)
        let start = CPUWatch.Reading(own: 1, servers: [7: 10], machine: (busy: 0, total: 0, cores: 4))
        // Server 8 was not there at the start: left out, not counted from zero.
        let end = CPUWatch.Reading(own: 1.5, servers: [7: 12, 8: 5], machine: (busy: 300, total: 400, cores: 4))
        let use = watch.use(from: start, to: end, flows: 1000, seconds: 2)
        XCTAssertEqual(use.processes.map(\.role), ["load generator", "server"])
        XCTAssertEqual(use.processes[0].millisecondsPerFlow, 0.5, accuracy: 1e-9)
        XCTAssertEqual(use.processes[1].millisecondsPerFlow, 2, accuracy: 1e-9)
        XCTAssertEqual(use.processes[1].cores, 1, accuracy: 1e-9)
        XCTAssertEqual(use.serverMillisecondsPerFlow ?? 0, 2, accuracy: 1e-9)
        XCTAssertEqual(use.machineCores, 4)
        XCTAssertEqual(use.machineCoresBusy ?? 0, 3, accuracy: 1e-9)
        XCTAssertEqual(use.machineMillisecondsPerFlow ?? 0, 300 / ProcFS.ticksPerSecond, accuracy: 1e-9)
    }

    func testThisProcessIsReadable() throws {
        #if os(Linux)
        let text = try String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        XCTAssertNotNil(ProcFS.processTicks(text))
        XCTAssertNotNil(ProcFS.machineTicks(try String(contentsOfFile: "/proc/stat", encoding: .utf8)))
        #endif
        XCTAssertGreaterThan(CPUWatch.ownCPUSeconds(), 0)
    }
}
