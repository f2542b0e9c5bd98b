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

    func testTheDatabaseProcessesAreSummedAndANewOneCountsWhole() {
        let watch = CPUWatch(serverPIDs: [], embeddedServers: false, databaseProcess: "postgres")
        let start = CPUWatch.Reading(own: 1, servers: [:], machine: nil, database: [20: 3, 21: 1, 22: 9])
        // 22 ended during the phase (its share is unknown); 23 started during it.
        let end = CPUWatch.Reading(own: 1, servers: [:], machine: nil, database: [20: 4, 21: 1.5, 23: 0.5])
        let use = watch.use(from: start, to: end, flows: 1000, seconds: 2)
        XCTAssertEqual(use.database?.name, "postgres")
        XCTAssertEqual(use.database?.processes, 4)
        XCTAssertEqual(use.database?.cpuSeconds ?? 0, 2, accuracy: 1e-9)
        XCTAssertEqual(use.database?.millisecondsPerFlow ?? 0, 2, accuracy: 1e-9)
        XCTAssertEqual(use.database?.cores ?? 0, 1, accuracy: 1e-9)
        XCTAssertTrue(LoadReport.lines(use)[0].contains("database (postgres, 4 processes) 2.000 (1.00 cores)"), LoadReport.lines(use)[0])
    }

    func testNoDatabaseIsReportedUnlessAskedFor() {
        let watch = CPUWatch(serverPIDs: [], embeddedServers: false)
        let reading = CPUWatch.Reading(own: 1, servers: [:], machine: nil, database: [20: 3])
        XCTAssertNil(watch.use(from: reading, to: reading, flows: 10, seconds: 1).database)
    }

    func testTheCommandNameMayHoldSpacesAndParentheses() {
        XCTAssertEqual(ProcFS.commandName(process), "mauth")
        XCTAssertEqual(ProcFS.commandName("4242 (a (b) c) S 1"), "a (b) c")
        XCTAssertNil(ProcFS.commandName("4242 mauth S 1"))
    }

    func testADatabaseProcessNameThatMatchesNothingIsRefused() throws {
        XCTAssertEqual(CPUUse.problem(watchingProcessesNamed: ""), "the process name is empty")
        XCTAssertEqual(
            CPUUse.problem(watchingProcessesNamed: "postgresql-15-main"),
            "'postgresql-15-main' is longer than the 15 bytes Linux keeps of a process name (as pgrep -x matches it)")
        XCTAssertEqual(
            CPUUse.problem(watchingProcessesNamed: "no-such-process"),
            "no process named 'no-such-process' runs on this machine (as pgrep -x matches it)")
        #if os(Linux)
        let name = try XCTUnwrap(ProcFS.commandName(try String(contentsOfFile: "/proc/self/stat", encoding: .utf8)))
        XCTAssertNil(CPUUse.problem(watchingProcessesNamed: String(name)))
        #endif
    }

    func testThisProcessIsFoundByItsName() throws {
        #if os(Linux)
        let text = try String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        let name = try XCTUnwrap(ProcFS.commandName(text))
        XCTAssertNotNil(ProcFS.processes(named: String(name))[ProcessInfo.processInfo.processIdentifier])
        XCTAssertTrue(ProcFS.processes(named: "no-process-has-this-name").isEmpty)
        #endif
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
