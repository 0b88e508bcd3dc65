// Tensors made from a description: Range, ConstantOfShape, EyeLike.

#include <cmath>

#include "runtime/kernels/tensor/tensor.h"
#include "runtime/tensor_proto.h"

namespace onnxkit::runtime::tensor_ops {

void register_generators(KernelRegistry& r) {
  r.add("", "Range", 11, kLatestOpset, make_kernel([](KernelContext& ctx) -> Status {
          ONNXKIT_ASSIGN(const Tensor* start, ctx.tensor(0));
          ONNXKIT_ASSIGN(const Tensor* limit, ctx.tensor(1));
          ONNXKIT_ASSIGN(const Tensor* delta, ctx.tensor(2));
          for (const Tensor* t : {start, limit, delta})
            if (t->numel() != 1 || t->dtype() != start->dtype())
              return make_error("start, limit and delta must be scalars of one type");
          return dispatch_numeric(start->dtype(), [&]<class T>() -> Status {
            double s = static_cast<double>(start->data<T>()[0]), l = static_cast<double>(limit->data<T>()[0]),
                   d = static_cast<double>(delta->data<T>()[0]);
            if (d == 0) return make_error("delta is 0");
            const double count = std::ceil((l - s) / d);
            // in double, before the cast: 2^63 and more (or NaN) do not fit int64
            if (!(count <= static_cast<double>(kMaxElements))) {
              const auto shown = [](const Tensor* t) {  // integers as themselves, not as doubles
                if constexpr (std::is_integral_v<T>) return fmt::format("{}", t->data<T>()[0]);
                return fmt::format("{}", static_cast<double>(t->data<T>()[0]));
              };
              return make_error("from {} to {} by {}: {:.0f} elements, more than {}", shown(start), shown(limit), shown(delta),
                                count, kMaxElements);
            }
            const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
            Tensor& y = ctx.output(0, start->dtype(), {n});
            T* p = y.mutable_data<T>();
            T value = start->data<T>()[0];
            const T step = delta->data<T>()[0];
            for (int64_t i = 0; i < n; ++i) {  // repeated addition, as the spec defines it
              p[i] = value;
              value = static_cast<T>(static_cast<double>(value) + static_cast<double>(step));
            }
            return {};
          });
        }));

  r.add("", "ConstantOfShape", 9, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          Tensor value = Tensor::from<float>({1}, {0.0f});
          ONNXKIT_ASSIGN(std::optional<Tensor> t, info.attr_tensor("value"));
          if (t) {
            if (t->numel() != 1) return make_error("attribute 'value' must hold one element");
            value = std::move(*t);
          }
          return ComputeFn([value](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* shape_t, ctx.tensor(0));
            ONNXKIT_ASSIGN(std::vector<int64_t> dims, read_int64s(*shape_t));
            Tensor& y = ctx.output(0, value.dtype(), Shape(dims.begin(), dims.end()));
            auto fill = [&]<class T>() -> Status {
              std::fill_n(y.mutable_data<T>(), y.numel(), value.data<T>()[0]);
              return {};
            };
            if (is_low_precision(value.dtype())) return dispatch_low_precision(value.dtype(), fill);
            return dispatch_all(value.dtype(), fill);
          });
        }));

  r.add("", "EyeLike", 9, kLatestOpset, make_kernel([](const KernelInfo& info) -> Result<ComputeFn> {
          int64_t k = info.attr_int("k", 0);
          int64_t dtype_attr = info.attr_int("dtype", 0);
          return ComputeFn([=](KernelContext& ctx) -> Status {
            ONNXKIT_ASSIGN(const Tensor* x, ctx.tensor(0));
            if (x->rank() != 2) return make_error("input must be 2-D, got {}", shape_to_string(x->shape()));
            DataType type = dtype_attr != 0 ? static_cast<DataType>(dtype_attr) : x->dtype();
            Tensor& y = ctx.output(0, type, x->shape());
            auto fill = [&]<class T>() -> Status {
              T* p = y.mutable_data<T>();
              std::fill_n(p, y.numel(), T(0));
              for (int64_t i = 0; i < x->dim(0); ++i)
                if (i + k >= 0 && i + k < x->dim(1)) p[i * x->dim(1) + i + k] = T(1);
              return {};
            };
            if (type == DataType::boolean) return fill.template operator()<bool>();
            return dispatch_numeric(type, fill);
          });
        }));
}

}  // namespace onnxkit::runtime::tensor_ops
