//! The two calls of every lock cycle, `lockAcquire(id, waitMs, leaseMs, cancelId)`
//! and `lockRelease(id)`, as raw Node-API callbacks. The wrapper napi-rs generates
//! for a class method (unwrapping the receiver, its bookkeeping of native borrows, the
//! class check, its argument conversions) cost about 4k instructions per call: a third
//! of the addon's work in an uncontended cycle (scripts/client-cost.js). Here a call
//! reads its arguments, finds the lock's handle by its id (lock.rs), and starts its
//! promise (executor.rs). napi-rs
//! declares only what it wraps, so these two are declared by hand in fast.d.ts.

use std::ffi::CStr;
use std::panic::AssertUnwindSafe;
use std::ptr;
use std::sync::Arc;

use napi::bindgen_prelude::{JsValue, Object};
use napi::{sys, Env, JsError};
use napi_derive::napi;

use crate::cancel::Abort;
use crate::errors::{bug, invalid, IntoJs, Result};
use crate::executor::raw_promise;
use crate::lock::{self, Handle};

#[napi(module_exports)]
pub fn exports(exports: Object, env: Env) -> napi::Result<()> {
    define(&env, &exports, c"lockAcquire", lock_acquire)?;
    define(&env, &exports, c"lockRelease", lock_release)
}

type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

fn define(env: &Env, exports: &Object, name: &CStr, callback: Callback) -> napi::Result<()> {
    let mut function = ptr::null_mut();
    napi::check_status!(unsafe {
        sys::napi_create_function(env.raw(), name.as_ptr(), name.count_bytes() as isize, Some(callback), ptr::null_mut(), &mut function)
    })?;
    napi::check_status!(unsafe { sys::napi_set_named_property(env.raw(), exports.raw(), name.as_ptr(), function) })
}

/// Runs a callback's body; its failure (or panic: nothing unwinds into Node) is thrown
/// as a JS error with the failure's code.
unsafe fn entry(env: sys::napi_env, body: impl FnOnce() -> Result<sys::napi_value>) -> sys::napi_value {
    let failure = match std::panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => return value,
        Ok(Err(e)) => e,
        Err(panic) => bug(&panic),
    };
    unsafe { JsError::from(failure).throw_into(env) };
    ptr::null_mut()
}

/// The first `N` arguments (`undefined` where fewer were given).
unsafe fn args<const N: usize>(env: sys::napi_env, info: sys::napi_callback_info) -> Result<[sys::napi_value; N]> {
    let mut argv = [ptr::null_mut(); N];
    let mut argc = N;
    let status = unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) };
    napi::check_status!(status).js()?;
    Ok(argv)
}

fn type_of(env: sys::napi_env, value: sys::napi_value) -> Result<sys::napi_valuetype> {
    let mut kind = 0;
    napi::check_status!(unsafe { sys::napi_typeof(env, value, &mut kind) }).js()?;
    Ok(kind)
}

/// The lock handle argument: a lock id (what `client.lock` and `multiLock` return).
fn handle_arg(env: sys::napi_env, value: sys::napi_value) -> Result<Arc<Handle>> {
    if type_of(env, value)? != sys::ValueType::napi_number {
        return Err(invalid("not a lock handle (a lock id)"));
    }
    let mut id = 0;
    napi::check_status!(unsafe { sys::napi_get_value_uint32(env, value, &mut id) }).js()?;
    lock::handle(id)
}

/// A number argument that may be absent (`undefined` or `null`).
fn number_arg(env: sys::napi_env, value: sys::napi_value, what: &str) -> Result<Option<f64>> {
    match type_of(env, value)? {
        sys::ValueType::napi_undefined | sys::ValueType::napi_null => Ok(None),
        sys::ValueType::napi_number => {
            let mut number = 0.0;
            napi::check_status!(unsafe { sys::napi_get_value_double(env, value, &mut number) }).js()?;
            Ok(Some(number))
        }
        _ => Err(invalid(format!("{what} must be a number"))),
    }
}

/// `lockAcquire(id, waitMs?, leaseMs?, cancelId?)`: lock.rs's acquire, resolving like it.
unsafe extern "C" fn lock_acquire(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe {
        entry(env, || {
            let [handle, wait_ms, lease_ms, cancel_id] = args::<4>(env, info)?;
            let handle = handle_arg(env, handle)?;
            let (wait_ms, lease_ms) = (number_arg(env, wait_ms, "waitMs")?, number_arg(env, lease_ms, "leaseMs")?);
            let abort = Abort::take(number_arg(env, cancel_id, "cancelId")?.map(|id| id as u32));
            raw_promise(env, lock::acquire(handle, wait_ms, lease_ms, abort)).js()
        })
    }
}

/// `lockRelease(id)`: releases one level; resolves with the levels left.
unsafe extern "C" fn lock_release(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    unsafe {
        entry(env, || {
            let [handle] = args::<1>(env, info)?;
            raw_promise(env, lock::release(handle_arg(env, handle)?)).js()
        })
    }
}
