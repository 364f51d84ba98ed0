// Clang's thread-safety analysis (-Wthread-safety): the attributes that say which mutex guards a field and which
// locks a function needs, takes or gives back, and memq::Mutex / MutexLock / CondVar, a mutex the analysis can
// follow (libstdc++'s std::mutex carries no annotations). Under GCC the attributes expand to nothing; the test
// ThreadSafetyAnalysis (tests/thread_safety/check.py) compiles daemon/ with clang to check them.
#pragma once

#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define MEMQ_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define MEMQ_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) MEMQ_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY MEMQ_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) MEMQ_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) MEMQ_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) MEMQ_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) MEMQ_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) MEMQ_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) MEMQ_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) MEMQ_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define RETURN_CAPABILITY(x) MEMQ_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS MEMQ_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace memq {

// std::mutex with annotated lock and unlock. Lockable, so std::unique_lock<Mutex> and std::condition_variable_any
// work with it too (the analysis does not follow those: prefer MutexLock and CondVar).
class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mutex_.lock(); }
  void unlock() RELEASE() { mutex_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mutex_.try_lock(); }

 private:
  friend class CondVar;  // waits on mutex_ itself
  std::mutex mutex_;
};

// Holds a Mutex for its scope; unlock() and lock() let a loop give it back for a while.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mutex_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;
  void unlock() RELEASE() {
    mutex_.unlock();
    held_ = false;
  }
  void lock() ACQUIRE() {
    mutex_.lock();
    held_ = true;
  }

 private:
  Mutex& mutex_;
  bool held_ = true;
};

// A condition variable waited on with a Mutex held. Callers loop on their condition (`while (!ready) cv.wait(mu);`)
// in the function that holds the lock, where the analysis sees it held (it does not see it inside a predicate
// lambda).
//
// A std::condition_variable on the Mutex's own std::mutex, not a std::condition_variable_any on the Mutex: the latter
// guards its wait with a mutex of its own, which its notify holds while it signals, so a waiter it wakes can wake up
// only to block on that mutex and have to be woken a second time, and every notify locks that mutex even when nobody
// waits. A wake-up of a sleeping thread is an interrupt to another core (on a virtual machine, an exit to the
// hypervisor), and memqd wakes its save applier at every save and a scan helper at every recall.
class CondVar {
 public:
  void wait(Mutex& mutex) REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock(mutex.mutex_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // held again, and still the caller's to give back
  }
  void notifyOne() { cv_.notify_one(); }
  void notifyAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace memq
