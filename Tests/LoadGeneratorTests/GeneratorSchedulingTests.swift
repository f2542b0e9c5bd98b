import Foundation
import LoadGenerator
import XCTest

/// `mauth load --url` puts its threads under SCHED_BATCH (``GeneratorScheduling``). These tests move only threads they
/// start themselves, and read the policy back from the kernel.
final class GeneratorSchedulingTests: XCTestCase {
    /// A thread of this process that reports its id, then waits until `release` is signalled; `body` runs on it first.
    final class ParkedThread: @unchecked Sendable {
        // @unchecked: `id` is written once before `started` is signalled and read only after waiting for it.
        private(set) var id: Int32?
        private let started = DispatchSemaphore(value: 0)
        private let release = DispatchSemaphore(value: 0)
        private let ended = DispatchSemaphore(value: 0)

        init(_ body: @escaping @Sendable () -> Void = {}) {
            let thread = Thread { [self] in
                id = GeneratorScheduling.currentThread()
                body()
                started.signal()
                release.wait()
                ended.signal()
            }
            thread.start()
            started.wait()
        }

        /// Lets the thread end and waits until the kernel no longer lists it.
        func end() {
            release.signal()
            ended.wait()
            guard let id else { return }
            for _ in 0..<200 where FileManager.default.fileExists(atPath: "/proc/self/task/\(id)") { usleep(5_000) }
        }
    }

    override func setUpWithError() throws {
        #if !os(Linux)
        throw XCTSkip("SCHED_BATCH exists only on Linux")
        #endif
    }

    func testTheThreadListHoldsTheCallerAndAThreadItStarted() throws {
        let parked = ParkedThread()
        defer { parked.end() }
        let threads = try GeneratorScheduling.threadsOfThisProcess()
        XCTAssertTrue(threads.contains(try XCTUnwrap(GeneratorScheduling.currentThread())))
        XCTAssertTrue(threads.contains(try XCTUnwrap(parked.id)))
    }

    func testAMovedThreadRunsUnderBatchAndAnotherDoesNot() throws {
        let moved = ParkedThread()
        let untouched = ParkedThread()
        defer {
            moved.end()
            untouched.end()
        }
        XCTAssertEqual(GeneratorScheduling.isBatch(try XCTUnwrap(moved.id)), false)
        XCTAssertEqual(try GeneratorScheduling.moveToBatch([try XCTUnwrap(moved.id)]), 1)
        XCTAssertEqual(GeneratorScheduling.isBatch(try XCTUnwrap(moved.id)), true)
        XCTAssertEqual(GeneratorScheduling.isBatch(try XCTUnwrap(untouched.id)), false)
    }

    func testAThreadStartedByABatchThreadInheritsBatch() throws {
        // What makes one call at the start enough: threads the generator creates later come from its own threads.
        let child = HandedThread()
        let parent = ParkedThread {
            _ = try? GeneratorScheduling.moveToBatch([GeneratorScheduling.currentThread() ?? -1])
            child.set(ParkedThread())
        }
        defer {
            parent.end()
            child.thread?.end()
        }
        XCTAssertEqual(GeneratorScheduling.isBatch(try XCTUnwrap(parent.id)), true)
        XCTAssertEqual(GeneratorScheduling.isBatch(try XCTUnwrap(child.thread?.id)), true)
    }

    func testAThreadThatEndedIsSkippedNotAnError() throws {
        let parked = ParkedThread()
        let id = try XCTUnwrap(parked.id)
        parked.end()
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/proc/self/task/\(id)"), "the thread had not ended")
        XCTAssertEqual(try GeneratorScheduling.moveToBatch([id]), 0)
    }

    /// The grandchild thread, handed from the thread that started it (its id is the thread's own).
    final class HandedThread: @unchecked Sendable {
        // @unchecked: written under `lock`, read under it.
        private let lock = NSLock()
        private var stored: ParkedThread?
        func set(_ thread: ParkedThread) { lock.withLock { stored = thread } }
        var thread: ParkedThread? { lock.withLock { stored } }
    }
}
