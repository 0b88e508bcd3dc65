#!/usr/bin/env python3
"""The ai.onnx.ml kernels on models trained here and converted the way users
convert them: scikit-learn through skl2onnx, LightGBM and XGBoost through
onnxmltools. The truth is the trained model's own predictions (labels
exactly, probabilities and values within 1e-5) and ONNX Runtime's outputs
for the same ONNX model; the ops no converter here emits (CategoryMapper,
CastMap, FeatureVectorizer) run in one-node models built by hand, against
values worked by hand and ONNX Runtime. Runs in the test venv (python/requirements-test.txt), with
the onnxkit package just built on its path; `onnxkit run` is checked once on
a model whose output is a sequence of maps.

usage: test_ml.py --onnxkit PATH [unittest args]"""

import argparse
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import onnxkit

warnings.filterwarnings("ignore")

from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.linear_model import LinearRegression, LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import LabelEncoder, OneHotEncoder, StandardScaler  # noqa: E402
from sklearn.svm import SVC, SVR  # noqa: E402
from skl2onnx import to_onnx  # noqa: E402

ARGS = None
TOL = 1e-5


def classification(classes, rows=300, features=8, seed=0):
    x, y = make_classification(n_samples=rows, n_features=features, n_informative=5, n_classes=classes,
                               n_clusters_per_class=1, random_state=seed)
    return x.astype(np.float32), y


def regression(rows=300, features=8, seed=0):
    x, y = make_regression(n_samples=rows, n_features=features, noise=0.5, random_state=seed)
    return x.astype(np.float32), y


def probabilities(output):
    """A classifier's probability output as an array: ZipMap's list of dicts
    (keys in class order) or a plain [N, C] array."""
    if isinstance(output, list):
        return np.array([[row[k] for k in sorted(row)] for row in output], dtype=np.float64)
    return np.asarray(output, dtype=np.float64)


def run_both(model, feeds):
    """The outputs of onnxkit and of ONNX Runtime for the same model and feeds."""
    data = model.SerializeToString()
    ours = onnxkit.InferenceSession(data).run(None, feeds)
    theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, feeds)
    return ours, theirs


def one_node_model(op, inputs, outputs, **attrs):
    """A model of one ai.onnx.ml node (an op type and its attributes, or a
    NodeProto); inputs and outputs are (name, element type, shape) or (name,
    TypeProto)."""
    def info(spec):
        if len(spec) == 2:
            return helper.make_value_info(spec[0], spec[1])
        return helper.make_tensor_value_info(*spec)

    if isinstance(op, onnx.NodeProto):
        node = op
    else:
        node = helper.make_node(op, [i[0] for i in inputs], [o[0] for o in outputs], domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], node.op_type, [info(i) for i in inputs], [info(o) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)])
    model.ir_version = 8
    return model


def plain_options():
    """Session options for no optimization: kernels on their plain layouts."""
    options = onnxkit.SessionOptions()
    options.graph_optimization_level = onnxkit.GraphOptimizationLevel.ORT_DISABLE_ALL
    return options


class MlModels(unittest.TestCase):
    def check_classifier(self, estimator, x, y, options=None, uses=()):
        estimator.fit(x, y)
        model = to_onnx(estimator, x[:1], options=options or {})
        ops = {n.op_type for n in model.graph.node}
        for op in uses:
            self.assertIn(op, ops)
        (label, proba), (ort_label, ort_proba) = run_both(model, {model.graph.input[0].name: x})
        np.testing.assert_array_equal(label, estimator.predict(x))
        np.testing.assert_array_equal(label, ort_label)
        np.testing.assert_allclose(probabilities(proba), estimator.predict_proba(x), rtol=0, atol=TOL)
        np.testing.assert_allclose(probabilities(proba), probabilities(ort_proba), rtol=0, atol=TOL)
        return model

    def check_regressor(self, estimator, x, y, uses=(), atol=TOL):
        estimator.fit(x, y)
        model = to_onnx(estimator, x[:1])
        ops = {n.op_type for n in model.graph.node}
        for op in uses:
            self.assertIn(op, ops)
        (value,), (ort_value,) = run_both(model, {model.graph.input[0].name: x})
        expected = estimator.predict(x).reshape(value.shape)
        # float32 outputs of values in the hundreds: 1e-5 relative to their scale.
        scale = max(1.0, float(np.abs(expected).max()))
        np.testing.assert_allclose(value, expected, rtol=0, atol=atol * scale)
        np.testing.assert_allclose(value, ort_value, rtol=0, atol=atol * scale)

    # --- trees ---------------------------------------------------------------------

    def test_random_forest_classifier_multiclass(self):
        x, y = classification(3)
        self.check_classifier(RandomForestClassifier(n_estimators=12, max_depth=6, random_state=0), x, y,
                              uses=["TreeEnsembleClassifier", "ZipMap"])

    def test_random_forest_classifier_binary_string_labels(self):
        x, y = classification(2, seed=1)
        labels = np.array(["no", "yes"])[y]
        self.check_classifier(RandomForestClassifier(n_estimators=8, max_depth=5, random_state=0), x, labels)

    def test_random_forest_regressor(self):
        x, y = regression()
        self.check_regressor(RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0), x, y,
                             uses=["TreeEnsembleRegressor"])

    def test_gradient_boosting_classifier_binary_and_multiclass(self):
        for classes in (2, 4):
            with self.subTest(classes=classes):
                x, y = classification(classes, seed=classes)
                self.check_classifier(GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0), x, y,
                                      uses=["TreeEnsembleClassifier"])

    def test_gradient_boosting_regressor(self):
        x, y = regression(seed=3)
        self.check_regressor(GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0), x, y)

    def test_missing_values_follow_the_trees(self):
        # HistGradientBoosting learns where NaN goes (missing_value_tracks_true).
        from sklearn.ensemble import HistGradientBoostingClassifier

        x, y = classification(2, seed=5)
        x[::7, 2] = np.nan
        x[::5, 4] = np.nan
        try:
            self.check_classifier(HistGradientBoostingClassifier(max_iter=15, random_state=0), x, y,
                                  options=None, uses=["TreeEnsembleClassifier"])
        except RuntimeError as e:  # a converter without it
            self.skipTest(str(e))

    def test_lightgbm_classifier_and_regressor(self):
        import lightgbm
        from onnxmltools import convert_lightgbm
        from onnxmltools.convert.common.data_types import FloatTensorType

        for classes in (2, 3):
            with self.subTest(classes=classes):
                x, y = classification(classes, seed=10 + classes)
                m = lightgbm.LGBMClassifier(n_estimators=30, num_leaves=15, verbose=-1).fit(x, y)
                model = convert_lightgbm(m, initial_types=[("X", FloatTensorType([None, x.shape[1]]))],
                                         target_opset=13, zipmap=False)
                (label, proba), (ort_label, ort_proba) = run_both(model, {"X": x})
                np.testing.assert_array_equal(label, m.predict(x))
                np.testing.assert_array_equal(label, ort_label)
                np.testing.assert_allclose(proba, m.predict_proba(x), rtol=0, atol=TOL)
                np.testing.assert_allclose(proba, ort_proba, rtol=0, atol=TOL)
        x, y = regression(seed=7)
        m = lightgbm.LGBMRegressor(n_estimators=40, num_leaves=15, verbose=-1).fit(x, y)
        model = convert_lightgbm(m, initial_types=[("X", FloatTensorType([None, x.shape[1]]))], target_opset=13)
        (value,), (ort_value,) = run_both(model, {"X": x})
        scale = max(1.0, float(np.abs(ort_value).max()))
        np.testing.assert_allclose(value.ravel(), m.predict(x), rtol=0, atol=TOL * scale)
        np.testing.assert_allclose(value, ort_value, rtol=0, atol=TOL * scale)

    def test_fast_tree_walk_matches_the_plain_one(self):
        # Sessions built without optimizations walk the plain node layout,
        # the oracle of the compact branch-free walk the others take: the
        # same sums in the same order, so equal to the last bit, across the
        # block edges (128 rows), with NaN routed by the trees, LEQ
        # (LightGBM, scikit-learn) and LT (XGBoost) forests, several
        # weights a leaf, MIN/MAX aggregation, and 1 and 2 threads.
        import lightgbm
        import xgboost
        from onnxmltools import convert_lightgbm, convert_xgboost
        from onnxmltools.convert.common.data_types import FloatTensorType

        x, y = classification(3, rows=600, seed=50)
        x[::9, 1] = np.nan
        x[::4, 5] = np.nan
        types = [("X", FloatTensorType([None, x.shape[1]]))]
        models = {
            "lightgbm": convert_lightgbm(lightgbm.LGBMClassifier(n_estimators=20, num_leaves=15, verbose=-1).fit(x, y),
                                         initial_types=types, target_opset=13, zipmap=False),
            "xgboost": convert_xgboost(xgboost.XGBClassifier(n_estimators=15, max_depth=5).fit(x, y),
                                       initial_types=types, target_opset=13),
        }
        clean = np.nan_to_num(x)
        forest = RandomForestClassifier(n_estimators=6, max_depth=7, random_state=0).fit(clean, y)
        models["forest"] = to_onnx(forest, clean[:1], options={id(forest): {"zipmap": False}})
        regressor = to_onnx(RandomForestRegressor(n_estimators=5, max_depth=6, random_state=0).fit(clean, y), clean[:1])
        models["forest_regressor"] = regressor
        for aggregate in ("MIN", "MAX", "AVERAGE"):
            changed = onnx.ModelProto()
            changed.CopyFrom(regressor)
            for a in changed.graph.node[0].attribute:
                if a.name == "aggregate_function":
                    a.s = aggregate.encode()
            models[f"forest_regressor_{aggregate}"] = changed
        for name, model in models.items():
            data = model.SerializeToString()
            plain = onnxkit.InferenceSession(data, plain_options(), threads=1)
            for threads in (1, 2):
                fast = onnxkit.InferenceSession(data, threads=threads)
                for rows in (1, 127, 128, 129, 600):
                    with self.subTest(model=name, threads=threads, rows=rows):
                        feed = {model.graph.input[0].name: x[:rows]}
                        for ours, oracle in zip(fast.run(None, feed), plain.run(None, feed)):
                            np.testing.assert_array_equal(ours, oracle)

    def test_fast_walk_on_trees_of_very_different_depths(self):
        # The fast walk takes rows a few at a time and stops a group when all
        # its rows sit on leaves: a forest of a lone leaf, a stump, a chain
        # 60 deep that rows leave at every level, and a full tree of depth 6,
        # with NaN sent either way, on row counts around the group and block
        # sizes, against the plain walk (to the bit) and ONNX Runtime.
        rng = np.random.default_rng(3)
        features = 5
        trees = []  # per tree: (node modes, features, thresholds, true ids, false ids, NaN-goes-true)
        trees.append((["LEAF"], [0], [0.0], [0], [0], [0]))
        trees.append((["BRANCH_LEQ", "LEAF", "LEAF"], [0, 0, 0], [0.1, 0, 0], [1, 0, 0], [2, 0, 0], [1, 0, 0]))
        depth = 60  # branch i's exit is leaf depth + 1 + i; the chain goes on through the other side
        modes, feats, values, yes, no, missing = [], [], [], [], [], []
        for i in range(depth):
            exit_leaf, onward = depth + 1 + i, i + 1 if i + 1 < depth else depth
            modes.append("BRANCH_LEQ")
            feats.append(i % features)
            values.append(float(rng.normal()) - 1.0)  # mostly false: rows go deep
            yes.append(exit_leaf if i % 3 else onward)
            no.append(onward if i % 3 else exit_leaf)
            missing.append(i % 2)
        modes += ["LEAF"] * (depth + 1)
        count = len(modes)
        trees.append((modes, feats + [0] * (count - depth), values + [0.0] * (count - depth), yes + [0] * (count - depth),
                      no + [0] * (count - depth), missing + [0] * (count - depth)))
        full = 2 ** 7 - 1
        branch = [i < 2 ** 6 - 1 for i in range(full)]
        trees.append((["BRANCH_LEQ" if b else "LEAF" for b in branch], [int(rng.integers(features)) for _ in branch],
                      [float(rng.normal()) for _ in branch], [2 * i + 1 if b else 0 for i, b in enumerate(branch)],
                      [2 * i + 2 if b else 0 for i, b in enumerate(branch)], [int(i % 5 == 0) for i in range(full)]))
        attrs = {k: [] for k in ("tree", "node", "mode", "feature", "value", "yes", "no", "missing", "leaf_tree", "leaf_node")}
        for t, (modes, feats, values, yes, no, missing) in enumerate(trees):
            for i, mode in enumerate(modes):
                for key, v in zip(("tree", "node", "mode", "feature", "value", "yes", "no", "missing"),
                                  (t, i, mode, feats[i], values[i], yes[i], no[i], missing[i])):
                    attrs[key].append(v)
                if mode == "LEAF":
                    attrs["leaf_tree"].append(t)
                    attrs["leaf_node"].append(i)
        leaves = len(attrs["leaf_tree"])
        node = helper.make_node(
            "TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=2,
            nodes_treeids=attrs["tree"], nodes_nodeids=attrs["node"], nodes_modes=attrs["mode"],
            nodes_featureids=attrs["feature"], nodes_values=attrs["value"], nodes_truenodeids=attrs["yes"],
            nodes_falsenodeids=attrs["no"], nodes_missing_value_tracks_true=attrs["missing"],
            target_treeids=attrs["leaf_tree"], target_nodeids=attrs["leaf_node"],
            target_ids=[i % 2 for i in range(leaves)], target_weights=rng.normal(size=leaves).astype(np.float32).tolist())
        model = one_node_model(node, [("X", TensorProto.FLOAT, [None, features])], [("Y", TensorProto.FLOAT, [None, 2])])
        x = rng.normal(size=(300, features)).astype(np.float32)
        x[::6, 0] = np.nan
        x[::11, 3] = np.nan
        data = model.SerializeToString()
        plain = onnxkit.InferenceSession(data, plain_options(), threads=1)
        theirs = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
        for threads in (1, 2):
            fast = onnxkit.InferenceSession(data, threads=threads)
            for rows in (1, 7, 8, 9, 135, 300):
                with self.subTest(threads=threads, rows=rows):
                    feed = {"X": x[:rows]}
                    ours = fast.run(None, feed)[0]
                    np.testing.assert_array_equal(ours, plain.run(None, feed)[0])
                    np.testing.assert_allclose(ours, theirs.run(None, feed)[0], rtol=0, atol=TOL)

    def test_leaf_without_weights(self):
        # Tree 0: x0 <= 0 ? leaf (no weight) : leaf 5; tree 1: x1 <= 0.5 ? leaf 1 : leaf 2.
        # A leaf may carry no weight; the fast walk must not take its neighbour's.
        node = helper.make_node(
            "TreeEnsembleRegressor", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=1,
            nodes_treeids=[0, 0, 0, 1, 1, 1], nodes_nodeids=[0, 1, 2, 0, 1, 2], nodes_featureids=[0, 0, 0, 1, 0, 0],
            nodes_modes=["BRANCH_LEQ", "LEAF", "LEAF"] * 2, nodes_values=[0.0, 0.0, 0.0, 0.5, 0.0, 0.0],
            nodes_truenodeids=[1, 0, 0, 1, 0, 0], nodes_falsenodeids=[2, 0, 0, 2, 0, 0],
            target_treeids=[0, 1, 1], target_nodeids=[2, 1, 2], target_ids=[0, 0, 0], target_weights=[5.0, 1.0, 2.0])
        model = one_node_model(node, [("X", TensorProto.FLOAT, [None, 2])], [("Y", TensorProto.FLOAT, [None, 1])])
        x = np.array([[-1, 0], [1, 1], [-1, 1], [1, 0]], np.float32)
        (ours,), (theirs,) = run_both(model, {"X": x})
        np.testing.assert_array_equal(ours, [[1], [7], [2], [6]])
        np.testing.assert_array_equal(ours, theirs)

    def test_tree_ensemble_opset5_with_set_membership(self):
        # One tree: x <= 11 ? (x in {1.2, 3.7, 8, 9} ? leaf 0 : (x in {12, 7} ? leaf 1 : leaf 3)) : leaf 2,
        # leaves scoring targets 0..3 with 1, 10, 1000, 100. NaN fails every test.
        node = helper.make_node(
            "TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=4, aggregate_function=1,
            membership_values=helper.make_tensor("m", TensorProto.FLOAT, [8], [1.2, 3.7, 8, 9, np.nan, 12, 7, np.nan]),
            nodes_featureids=[0, 0, 0],
            nodes_modes=helper.make_tensor("modes", TensorProto.UINT8, [3], [0, 6, 6]),
            nodes_splits=helper.make_tensor("splits", TensorProto.FLOAT, [3], [11, 0, 0]),
            nodes_trueleafs=[0, 1, 1], nodes_truenodeids=[1, 0, 1], nodes_falseleafs=[1, 0, 1],
            nodes_falsenodeids=[2, 2, 3], leaf_targetids=[0, 1, 2, 3],
            leaf_weights=helper.make_tensor("w", TensorProto.FLOAT, [4], [1, 10, 1000, 100]), tree_roots=[0])
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 1])],
                                  [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 4])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 5)])
        model.ir_version = 8
        x = np.array([1.2, 3.4, -0.12, np.nan, 12, 7], dtype=np.float32).reshape(-1, 1)
        expected = np.array([[1, 0, 0, 0], [0, 0, 0, 100], [0, 0, 0, 100], [0, 0, 1000, 0], [0, 0, 1000, 0],
                             [0, 10, 0, 0]], dtype=np.float32)
        ours = onnxkit.InferenceSession(model.SerializeToString()).run(None, {"X": x})[0]
        np.testing.assert_array_equal(ours, expected)
        try:
            theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
        except Exception as e:  # an ONNX Runtime without ai.onnx.ml opset 5
            self.skipTest(str(e))
        np.testing.assert_array_equal(ours, theirs)

    def test_xgboost_classifier_and_regressor(self):
        import xgboost
        from onnxmltools import convert_xgboost
        from onnxmltools.convert.common.data_types import FloatTensorType

        for classes in (2, 3):
            with self.subTest(classes=classes):
                x, y = classification(classes, seed=40 + classes)
                m = xgboost.XGBClassifier(n_estimators=25, max_depth=4, learning_rate=0.3).fit(x, y)
                model = convert_xgboost(m, initial_types=[("X", FloatTensorType([None, x.shape[1]]))], target_opset=13)
                self.assertIn("TreeEnsembleClassifier", {n.op_type for n in model.graph.node})
                (label, proba), (ort_label, ort_proba) = run_both(model, {"X": x})
                np.testing.assert_array_equal(label, m.predict(x))
                np.testing.assert_array_equal(label, ort_label)
                np.testing.assert_allclose(proba, m.predict_proba(x), rtol=0, atol=TOL)
                np.testing.assert_allclose(proba, ort_proba, rtol=0, atol=TOL)
        x, y = regression(seed=41)
        m = xgboost.XGBRegressor(n_estimators=40, max_depth=5, learning_rate=0.2).fit(x, y)
        model = convert_xgboost(m, initial_types=[("X", FloatTensorType([None, x.shape[1]]))], target_opset=13)
        (value,), (ort_value,) = run_both(model, {"X": x})
        scale = max(1.0, float(np.abs(ort_value).max()))
        np.testing.assert_allclose(value.ravel(), m.predict(x), rtol=0, atol=TOL * scale)
        np.testing.assert_allclose(value, ort_value, rtol=0, atol=TOL * scale)

    # --- hand-built models of the ops no converter here emits ------------------------

    def test_category_mapper_both_ways(self):
        cats = dict(cats_strings=["cat", "dog", "emu"], cats_int64s=[7, 3, 11])
        words = np.array([["dog", "emu", "yak"], ["cat", "", "dog"]], dtype=object)
        codes = np.array([11, 7, 0, 3, -7], dtype=np.int64)
        for feed, out_type, attrs, expected in (
            (words, TensorProto.INT64, dict(default_int64=-99), np.array([[3, 11, -99], [7, -99, 3]])),
            (codes, TensorProto.STRING, dict(default_string="none"), np.array(["emu", "cat", "none", "dog", "none"])),
            (codes, TensorProto.STRING, {}, np.array(["emu", "cat", "_Unused", "dog", "_Unused"])),
        ):
            with self.subTest(attrs=attrs):
                in_type = TensorProto.STRING if feed.dtype == object else TensorProto.INT64
                model = one_node_model("CategoryMapper", [("X", in_type, list(feed.shape))],
                                       [("Y", out_type, list(feed.shape))], **cats, **attrs)
                (ours,), (theirs,) = run_both(model, {"X": feed})
                np.testing.assert_array_equal(ours, expected)
                np.testing.assert_array_equal(ours, theirs)

    def test_cast_map(self):
        # ONNX Runtime's Python binding takes no map of strings: those cases
        # check against the values worked by hand only.
        floats = {3: 1.5, 1: -2.25, 7: 4.75}
        strings = {2: "3.5", 0: "-1", 5: "12"}
        for feed, value_type, attrs, expected in (
            # DENSE: the values in key order.
            (floats, TensorProto.FLOAT, dict(cast_to="TO_FLOAT"), np.array([[-2.25, 1.5, 4.75]], np.float32)),
            (floats, TensorProto.FLOAT, dict(cast_to="TO_INT64"), np.array([[-2, 1, 4]], np.int64)),
            (floats, TensorProto.FLOAT, dict(cast_to="TO_STRING"),
             np.array([["-2.250000", "1.500000", "4.750000"]], dtype=object)),
            (strings, TensorProto.STRING, dict(cast_to="TO_FLOAT"), np.array([[-1, 3.5, 12]], np.float32)),
            (strings, TensorProto.STRING, dict(cast_to="TO_INT64"), np.array([[-1, 3, 12]], np.int64)),
            (strings, TensorProto.STRING, dict(cast_to="TO_STRING"), np.array([["-1", "3.5", "12"]], dtype=object)),
            # SPARSE: the value of key k at column k of max_map, zeros elsewhere; keys past it dropped.
            (floats, TensorProto.FLOAT, dict(cast_to="TO_FLOAT", map_form="SPARSE", max_map=5),
             np.array([[0, -2.25, 0, 1.5, 0]], np.float32)),
            (floats, TensorProto.FLOAT, dict(cast_to="TO_INT64", map_form="SPARSE", max_map=8),
             np.array([[0, -2, 0, 1, 0, 0, 0, 4]], np.int64)),
            (strings, TensorProto.STRING, dict(cast_to="TO_INT64", map_form="SPARSE", max_map=6),
             np.array([[-1, 0, 3, 0, 0, 12]], np.int64)),
            (strings, TensorProto.STRING, dict(cast_to="TO_STRING", map_form="SPARSE", max_map=4),
             np.array([["-1", "0", "3.5", "0"]], dtype=object)),
        ):
            with self.subTest(feed=feed, attrs=attrs):
                out_type = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
                            np.dtype(object): TensorProto.STRING}[expected.dtype]
                map_type = onnx.TypeProto()
                map_type.map_type.key_type = TensorProto.INT64
                map_type.map_type.value_type.tensor_type.elem_type = value_type
                model = one_node_model("CastMap", [("X", map_type)], [("Y", out_type, [1, None])], **attrs)
                ours = onnxkit.InferenceSession(model.SerializeToString()).run(None, {"X": feed})[0]
                np.testing.assert_array_equal(ours, expected)
                if value_type == TensorProto.FLOAT:
                    theirs = ort.InferenceSession(model.SerializeToString(),
                                                  providers=["CPUExecutionProvider"]).run(None, {"X": feed})[0]
                    np.testing.assert_array_equal(ours, theirs)

    def test_feature_vectorizer(self):
        # The columns of each input in order; an input wider than its
        # dimension is cut, a narrower one padded with zeros. Inputs share
        # one element type (T1 of the schema; ONNX Runtime refuses a mix).
        a = np.array([[1.5, -2, 9], [0.25, 4, 7]])
        b = np.array([[3, 8], [-5, 6]])
        c = np.array([[0.125], [-0.5]])
        expected = np.array([[1.5, -2, 3, 8, 0, 0.125], [0.25, 4, -5, 6, 0, -0.5]], np.float32)
        for dtype, elem in ((np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE),
                            (np.int64, TensorProto.INT64), (np.int32, TensorProto.INT32)):
            with self.subTest(dtype=dtype.__name__):
                feeds = {"A": a.astype(dtype), "B": b.astype(dtype), "C": c.astype(dtype)}
                inputs = [(name, elem, list(v.shape)) for name, v in feeds.items()]
                model = one_node_model("FeatureVectorizer", inputs, [("Y", TensorProto.FLOAT, [2, None])],
                                       inputdimensions=[2, 3, 1])
                (ours,), (theirs,) = run_both(model, feeds)
                want = expected if dtype in (np.float32, np.float64) else np.trunc(expected)
                np.testing.assert_array_equal(ours, want)
                np.testing.assert_array_equal(ours, theirs)

    # --- linear models, SVMs, pipelines ---------------------------------------------

    def test_logistic_regression(self):
        for classes in (2, 3):
            with self.subTest(classes=classes):
                x, y = classification(classes, seed=20 + classes)
                self.check_classifier(LogisticRegression(max_iter=500), x, y, uses=["LinearClassifier"])

    def test_linear_regression(self):
        x, y = regression(seed=4)
        self.check_regressor(LinearRegression(), x, y)

    def test_svc(self):
        for classes in (2, 3):
            with self.subTest(classes=classes, probability=True):
                x, y = classification(classes, rows=150, seed=30 + classes)
                self.check_classifier(SVC(kernel="rbf", gamma=0.1, probability=True, random_state=0), x, y,
                                      uses=["SVMClassifier"])
            with self.subTest(classes=classes, probability=False):
                # Without probabilities the scores are the decision function
                # (one column per class pair; for two classes the decision
                # and its negation, as ONNX Runtime writes them).
                svc = SVC(kernel="rbf", gamma=0.1, decision_function_shape="ovo").fit(x, y)
                model = to_onnx(svc, x[:1], options={id(svc): {"zipmap": False}})
                (label, scores), (ort_label, ort_scores) = run_both(model, {model.graph.input[0].name: x})
                np.testing.assert_array_equal(label, svc.predict(x))
                np.testing.assert_array_equal(label, ort_label)
                decision = svc.decision_function(x)
                if classes == 2:
                    decision = np.stack([decision, -decision], axis=1)
                np.testing.assert_allclose(scores, ort_scores, rtol=0, atol=TOL)
                np.testing.assert_allclose(scores, decision, rtol=0, atol=TOL)

    def test_svr(self):
        x, y = regression(rows=200, seed=8)
        self.check_regressor(SVR(kernel="rbf", C=10.0, gamma=0.05), x, y, uses=["SVMRegressor"])
        self.check_regressor(SVR(kernel="linear", C=1.0), x, y, uses=["SVMRegressor"])

    def test_pipeline_with_scaler_imputer_and_one_hot(self):
        rng = np.random.default_rng(0)
        rows = 200
        x = rng.normal(size=(rows, 4)).astype(np.float32)
        x[:, 3] = rng.integers(0, 3, size=rows)  # a categorical column of codes
        y = ((x[:, 0] + (x[:, 3] == 1)) > 0.5).astype(np.int64)
        x[:, :3][rng.random((rows, 3)) < 0.1] = np.nan
        pipe = Pipeline([
            ("columns", ColumnTransformer([
                ("num", Pipeline([("impute", SimpleImputer(strategy="mean")), ("scale", StandardScaler())]), [0, 1, 2]),
                ("cat", OneHotEncoder(handle_unknown="ignore"), [3]),
            ])),
            ("model", LogisticRegression(max_iter=500)),
        ]).fit(x, y)
        model = to_onnx(pipe, x[:1])
        ops = {n.op_type for n in model.graph.node}
        for op in ("Imputer", "Scaler", "OneHotEncoder", "LinearClassifier", "ZipMap"):
            self.assertIn(op, ops)
        (label, proba), (ort_label, ort_proba) = run_both(model, {model.graph.input[0].name: x})
        np.testing.assert_array_equal(label, pipe.predict(x))
        np.testing.assert_array_equal(label, ort_label)
        np.testing.assert_allclose(probabilities(proba), pipe.predict_proba(x), rtol=0, atol=TOL)
        np.testing.assert_allclose(probabilities(proba), probabilities(ort_proba), rtol=0, atol=TOL)

    def test_one_hot_encoder_on_strings(self):
        from skl2onnx.common.data_types import StringTensorType

        colours = np.array([["red"], ["green"], ["blue"], ["green"]], dtype=object)
        enc = OneHotEncoder(handle_unknown="ignore").fit(colours)
        model = to_onnx(enc, initial_types=[("colour", StringTensorType([None, 1]))])
        feed = np.array([["blue"], ["mauve"], ["red"]], dtype=object)
        (ours,), (theirs,) = run_both(model, {"colour": feed})
        np.testing.assert_array_equal(ours, enc.transform(feed).toarray())
        np.testing.assert_array_equal(ours, theirs)

    def test_label_encoder_on_strings(self):
        words = np.array(["pear", "apple", "fig", "apple", "kiwi", "pear"])
        enc = LabelEncoder().fit(words)
        from skl2onnx.common.data_types import StringTensorType

        model = to_onnx(enc, initial_types=[("words", StringTensorType([None]))])
        self.assertIn("LabelEncoder", {n.op_type for n in model.graph.node})
        feed = np.array(["fig", "pear", "kiwi", "apple", "banana"], dtype=object)
        (ours,), (theirs,) = run_both(model, {"words": feed})
        np.testing.assert_array_equal(ours[:4], enc.transform(feed[:4]))
        np.testing.assert_array_equal(ours, theirs)  # "banana" gets the default

    def test_transformers(self):
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.preprocessing import Binarizer, MaxAbsScaler, Normalizer

        x, _ = classification(3, rows=40)
        for transformer in (Normalizer(norm="l1"), Normalizer(norm="l2"), Normalizer(norm="max"),
                            Binarizer(threshold=0.3), MaxAbsScaler()):
            with self.subTest(transformer=str(transformer)):
                transformer.fit(x)
                model = to_onnx(transformer, x[:1])
                (ours,), (theirs,) = run_both(model, {model.graph.input[0].name: x})
                np.testing.assert_allclose(ours, theirs, rtol=0, atol=TOL)
                if transformer.get_params().get("norm") == "max":
                    # The spec's MAX divides by max(x) (so does ONNX Runtime),
                    # scikit-learn's by max(|x|): checked by hand instead.
                    np.testing.assert_allclose(ours, x / x.max(axis=1, keepdims=True), rtol=1e-6, atol=TOL)
                    continue
                np.testing.assert_allclose(ours, transformer.transform(x), rtol=0, atol=TOL)
        # DictVectorizer takes one map (a dict) per run.
        from skl2onnx.common.data_types import DictionaryType, FloatTensorType, StringTensorType

        rows = [{"a": 1.0, "b": 2.5}, {"b": -1.0, "c": 4.0}, {"a": 3.0, "d": 0.5}]
        vec = DictVectorizer(sparse=False).fit(rows)
        model = to_onnx(vec, initial_types=[("features", DictionaryType(StringTensorType([1]), FloatTensorType([1])))])
        self.assertIn("DictVectorizer", {n.op_type for n in model.graph.node})
        for row in rows + [{"c": 7.0, "zzz": 1.0}]:
            (ours,), (theirs,) = run_both(model, {"features": row})
            np.testing.assert_allclose(ours, vec.transform([row]), rtol=0, atol=TOL)
            np.testing.assert_allclose(ours, theirs, rtol=0, atol=TOL)

    # --- the command line ------------------------------------------------------------

    def test_run_writes_a_sequence_of_maps(self):
        x, y = classification(3, rows=60)
        forest = RandomForestClassifier(n_estimators=4, max_depth=4, random_state=0).fit(x, y)
        model = to_onnx(forest, x[:1])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "forest.onnx")
            onnx.save(model, path)
            np.save(os.path.join(tmp, "x.npy"), x)
            proc = subprocess.run([ARGS.onnxkit, "run", path, "--input", f"{model.graph.input[0].name}={tmp}/x.npy",
                                   "--output-dir", os.path.join(tmp, "out")], capture_output=True, text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            label = np.load(os.path.join(tmp, "out", "output_0.npy"))
            np.testing.assert_array_equal(label, forest.predict(x))
            seq = onnx.SequenceProto()
            with open(os.path.join(tmp, "out", "output_1.pb"), "rb") as f:
                seq.ParseFromString(f.read())
            self.assertEqual(len(seq.map_values), len(x))
            got = np.array([[float(numpy_helper.to_array(v)) for v in m.values.tensor_values] for m in seq.map_values])
            self.assertEqual(list(seq.map_values[0].keys), [0, 1, 2])
            np.testing.assert_allclose(got, forest.predict_proba(x), rtol=0, atol=TOL)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
